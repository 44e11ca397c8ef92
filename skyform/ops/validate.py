"""`skyform validate TASK.yaml`: a task file parsed and normalized, what skyform cannot run
yet, and the digest a plan of it would record. Changes nothing."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from skyform.spec import Dag, check_supported, load_task, task_digest
from skyform.spec.inputs import TaskInputs


@dataclass(frozen=True)
class Validation:
    dag: Dag
    digest: str
    warnings: list[str] = field(default_factory=list)


def validate(task_file: str | os.PathLike[str], inputs: TaskInputs) -> Validation:
    dag = load_task(task_file, inputs)
    warnings = check_supported(dag)
    return Validation(dag=dag, digest=task_digest(dag), warnings=warnings)
