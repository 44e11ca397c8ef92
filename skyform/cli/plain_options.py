"""The typer-free half of cli/options.py: what the verbs do with their options' values
(task inputs, cost limits, the output path), shared with the fast paths (cli/fastpath.py),
which run before Typer is imported. options.py re-exports each of them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyform.spec.inputs import TaskInputs


def task_inputs(
    env: list[str], env_file: list[Path], secret: list[str], overrides: Any = None
) -> TaskInputs:
    """The task inputs the shared options give, built once here and passed down."""
    from skyform.spec.inputs import TaskInputs

    return TaskInputs(
        envs=tuple(env),
        env_files=tuple(env_file),
        secrets=tuple(secret),
        resources=overrides or None,
    )


def is_plan_file(path: Path) -> bool:
    """A saved plan (JSON) rather than a task YAML: by suffix, else by its first byte."""
    if path.suffix == ".json":
        return True
    if not path.is_file():  # a FIFO or a device: never opened here (a FIFO would block)
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(64).lstrip().startswith(b"{")
    except OSError:
        return False


def require_cost_limit(flag: str, value: float | None) -> None:
    """A cost limit is a finite number of USD: `nan` would compare false against every cost
    and so disable the guard, `inf` guards nothing."""
    import math

    from skyform.errors import SkyformError

    if value is not None and not (math.isfinite(value) and value >= 0):
        raise SkyformError(
            f"{flag} {value}: a cost limit must be a finite number of USD, 0 or more",
            f"Write e.g. {flag} 2.50, or leave the flag out for no limit.",
        )


def refuse_overwriting_input(out: Path, task_file: Path) -> None:
    """`plan task.yaml -o task.yaml` would replace the task with its plan."""
    import os
    import shlex

    from skyform.errors import SkyformError

    # realpath, not resolve: a link loop is the task reader's to report, not a crash here
    same = os.path.realpath(out) == os.path.realpath(task_file)
    if not same and Path(out).exists():
        try:
            same = os.path.samefile(out, task_file)
        except OSError:
            same = False
    if same:
        raise SkyformError(
            f"-o {shlex.quote(str(out))} is the task file itself; the plan would overwrite it",
            f"Save the plan elsewhere: skyform plan {shlex.quote(str(task_file))} -o plan.json",
        )
