"""The task spec: SkyPilot-compatible task YAML -> a validated, normalized Dag.

    from skyform.spec import load_task
    dag = load_task("task.yaml", TaskInputs(envs=("K=V",)))
    for i in dag.topological_order(): dag.tasks[i].resources.groups ...

Every user error is a SpecError (or UnsupportedError) naming file, line, column, field.
"""

from __future__ import annotations

from skyform.spec.dag import Dag
from skyform.spec.digest import task_digest
from skyform.spec.loader import load_task, load_task_text
from skyform.spec.models import (
    Autostop,
    FileMount,
    GitWorkdir,
    JobRecovery,
    Range,
    ResourceChoices,
    ResourceRequest,
    SkyformExt,
    SourceRef,
    TaskSpec,
)
from skyform.spec.support import check_supported

__all__ = [
    "Autostop",
    "Dag",
    "FileMount",
    "GitWorkdir",
    "JobRecovery",
    "Range",
    "ResourceChoices",
    "ResourceRequest",
    "SkyformExt",
    "SourceRef",
    "TaskSpec",
    "check_supported",
    "load_task",
    "load_task_text",
    "task_digest",
]
