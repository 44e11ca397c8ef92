"""`skyform validate TASK.yaml`: a task file parsed and normalized, what skyform cannot run
yet, and the digest a plan of it would record. Changes nothing."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from skyform.spec import Dag, check_supported, load_task, task_digest


@dataclass(frozen=True)
class Validation:
    dag: Dag
    digest: str
    warnings: list[str] = field(default_factory=list)


def validate(task_file: str | os.PathLike[str], load_kwargs: dict[str, Any]) -> Validation:
    dag = load_task(task_file, **load_kwargs)
    warnings = check_supported(dag)
    return Validation(dag=dag, digest=task_digest(dag), warnings=warnings)
