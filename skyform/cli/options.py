"""Options shared by several verbs (task inputs, objective, resource flags, output formats).
Defined once, reused: every verb that takes an option takes the same values and gives the
same error for a bad one."""

from __future__ import annotations

import functools
import inspect
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from skyform.spec.inputs import TaskInputs

ENV = typer.Option(
    [], "--env", metavar="K[=V]", help="Set an env var (K alone: from your shell). Repeatable."
)
ENV_FILE = typer.Option(
    [], "--env-file", metavar="FILE", help="Read env vars from a dotenv file. Repeatable."
)
SECRET = typer.Option(
    [], "--secret", metavar="K[=V]", help="Set a secret (K alone: from your shell). Repeatable."
)
JSON = typer.Option(False, "--json", help="Machine-readable JSON on stdout.")
MARKDOWN = typer.Option(False, "--markdown", help="Render as a pull-request comment (markdown).")
YES = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")


class Minimize(str, Enum):
    """The optimizer's objective (skyform.plan.model.Objective)."""

    cost = "cost"
    time = "time"


MINIMIZE = typer.Option(Minimize.cost, "--minimize", help="Objective: cost or time.")


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


# SkyPilot's resource flags (sky/client/cli/flags.py), as `sky launch` reads them.
_RESOURCE_FLAGS: tuple[tuple[str, Any, Any], ...] = (
    (
        "gpus",
        str | None,
        typer.Option(
            None,
            "--gpus",
            metavar="NAME[:COUNT]",
            help="Accelerators, e.g. A100:8 ('none' removes them). Overrides the task's.",
        ),
    ),
    (
        "infra",
        str | None,
        typer.Option(
            None,
            "--infra",
            metavar="CLOUD[/REGION[/ZONE]]",
            help="Where to run: aws, aws/us-east-1, k8s/ctx, ssh/pool, local.",
        ),
    ),
    ("cloud", str | None, typer.Option(None, "--cloud", hidden=True)),
    ("region", str | None, typer.Option(None, "--region", hidden=True)),
    ("zone", str | None, typer.Option(None, "--zone", hidden=True)),
    (
        "instance_type",
        str | None,
        typer.Option(None, "--instance-type", "-t", help="Instance type."),
    ),
    ("num_nodes", int | None, typer.Option(None, "--num-nodes", min=1, help="Number of nodes.")),
    (
        "use_spot",
        bool | None,
        typer.Option(None, "--use-spot/--no-use-spot", help="Spot instances (or not)."),
    ),
    (
        "cpus",
        str | None,
        typer.Option(
            None, "--cpus", metavar="N[+]", help="vCPUs per node: 4 (exactly) or 4+ (at least)."
        ),
    ),
    (
        "memory",
        str | None,
        typer.Option(None, "--memory", metavar="GB[+]", help="Memory per node in GB: 16 or 16+."),
    ),
    (
        "disk_size",
        int | None,
        typer.Option(None, "--disk-size", metavar="GB", min=1, help="OS disk size in GB."),
    ),
    (
        "image_id",
        str | None,
        typer.Option(None, "--image-id", help="Machine image ('none' removes it)."),
    ),
    (
        "workdir",
        Path | None,
        typer.Option(
            None,
            "--workdir",
            metavar="DIR",
            help="Folder to sync to the nodes (instead of the task's workdir).",
        ),
    ),
    (
        "ports",
        list[str],
        typer.Option(
            [],
            "--ports",
            metavar="PORTS",
            help="Ports to open: 8080, 8000-8010 or 8080,9090. Repeatable.",
        ),
    ),
)


_AUTOSTOP_FLAGS: tuple[tuple[str, Any, Any], ...] = (
    (
        "idle_minutes_to_autostop",
        int | None,
        typer.Option(
            None,
            "--idle-minutes-to-autostop",
            "-i",
            min=0,
            help="Stop the cluster after this many idle minutes (with --down: tear it down).",
        ),
    ),
    (
        "down",
        bool | None,
        typer.Option(
            None,
            "--down",
            help="Tear the cluster down when idle instead of stopping it (alone: 1 minute "
            "after its last job).",
        ),
    ),
    (
        "wait_for",
        str | None,
        typer.Option(
            None,
            "--wait-for",
            metavar="jobs_and_ssh|jobs|none",
            help="What keeps it from being idle: jobs and interactive SSH sessions (default), "
            "jobs only, or nothing (a hard time limit).",
        ),
    ),
)


def resource_flags(command):
    """Give `command` SkyPilot's resource flags; it receives them as one keyword argument,
    `overrides: ResourceOverrides` (the workdir made absolute from the current directory)."""
    return _with_flags(command, _RESOURCE_FLAGS)


def launch_flags(command):
    """The resource flags and SkyPilot's autostop flags (-i, --down, --wait-for), for the
    verbs that make clusters from a task file (`launch`, `plan`, `apply TASK`)."""
    return _with_flags(command, _RESOURCE_FLAGS + _AUTOSTOP_FLAGS)


def _with_flags(command, flags: tuple[tuple[str, Any, Any], ...]):
    signature = inspect.signature(command)
    kept = [p for p in signature.parameters.values() if p.name != "overrides"]
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
        for name, kind, option in flags
    ]

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from skyform.spec.overrides import ResourceOverrides

        given = {name: kwargs.pop(name) for name, _, _ in flags}
        given["ports"] = tuple(given["ports"] or ())
        if given["workdir"] is not None:
            given["workdir"] = str(given["workdir"])
        overrides = ResourceOverrides(**given).resolved(Path.cwd())
        return command(*args, overrides=overrides, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=kept + added)  # type: ignore[attr-defined]
    hints = dict(getattr(command, "__annotations__", {}))
    hints.pop("overrides", None)
    hints.update({name: kind for name, kind, _ in flags})
    wrapper.__annotations__ = hints
    return wrapper


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

    same = Path(out).resolve() == Path(task_file).resolve()
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
