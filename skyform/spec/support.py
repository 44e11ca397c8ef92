"""What skyform runs of a valid SkyPilot task, and what it only reads.

A task whose every alternative names a cloud skyform does not run is an error; a task
with some such alternatives keeps the others (a warning says which were dropped).
A `service:` section is validated when the file is loaded (skyform/spec/service.py); plan,
launch and apply run the task as a plain job, like `sky launch` on a service YAML, and point
to `skyform serve up` for the service. `pool:` / `volumes:` / `config:` are kept but not acted on.
"""

from __future__ import annotations

import shlex

from skyform.errors import UnsupportedError
from skyform.spec.dag import Dag
from skyform.spec.infra import SUPPORTED_CLOUDS

_IGNORED_SECTIONS = {
    "service": (
        "service: is served by `skyform serve up {path}` (replicas behind a load balancer; "
        "review it first with `skyform serve plan {path}`); here the task runs as one plain "
        "job, like `sky launch`"
    ),
    "pool": "pool: (worker pools) is ignored; the task runs as a plain job",
    "volumes": "volumes: is ignored; use file_mounts for data",
    "config": "config: overrides are kept but not applied by skyform",
}


def check_supported(dag: Dag) -> list[str]:
    """Warnings for what skyform ignores; UnsupportedError if a task cannot run at all."""
    warnings = list(dag.warnings)
    supported = ", ".join(SUPPORTED_CLOUDS)
    for index, task in enumerate(dag.tasks):
        name = _describe(dag, index)
        where = f"{task.source.path}:{task.source.resources_line or task.source.line}"
        alternatives = task.resources.alternatives()
        foreign = sorted(
            {
                r.cloud
                for r in alternatives
                if r.cloud is not None and r.cloud not in SUPPORTED_CLOUDS
            }
        )
        runnable = [r for r in alternatives if r.cloud is None or r.cloud in SUPPORTED_CLOUDS]
        if foreign and not runnable:
            clouds = ", ".join(foreign)
            raise UnsupportedError(
                f"{name} can only run on {clouds}, which skyform does not support",
                f"skyform runs on: {supported}. Change resources.infra (or add an any_of "
                "alternative on one of them).",
                path=task.source.path,
                line=task.source.resources_line or task.source.line,
                column=task.source.resources_column,
                field="resources",
            )
        if foreign:
            warnings.append(
                f"{where}: {name}: alternatives on {', '.join(foreign)} are skipped "
                f"(skyform runs on {supported})"
            )
        for section, message in _IGNORED_SECTIONS.items():
            if getattr(task, section) is not None:
                shown = message.format(path=shlex.quote(task.source.path))
                warnings.append(f"{task.source.path}:{task.source.line}: {name}: {shown}")
    return warnings


def _describe(dag: Dag, index: int) -> str:
    task = dag.tasks[index]
    if task.name or task.source.file_name or len(dag.tasks) > 1:
        return task.called(index)
    return "the task"  # read from stdin: it has neither a name nor a file
