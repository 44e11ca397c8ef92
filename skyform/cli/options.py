"""Options shared by several verbs (task inputs, objective, resource flags, output formats).
Defined once, reused: every verb that takes an option takes the same values and gives the
same error for a bad one."""

from __future__ import annotations

import functools
import inspect
from enum import Enum
from pathlib import Path
from typing import Any

import typer

from skyform.cli.plain_options import (  # noqa: F401 - re-exported: the verbs use options.X
    is_plan_file,
    refuse_overwriting_input,
    require_cost_limit,
    task_inputs,
)

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
