"""One module per verb. Each exposes `register(app)`; keep imports inside command bodies."""

from __future__ import annotations

import importlib

import typer

# Order here is the order `skyform --help` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "validate",
    "plan",
    "show",
    "launch",
    "apply",
    "status",
    "down",
    "autostop",
    "exec",
    "ssh",
    "queue",
    "logs",
    "cancel",
    "jobs",
    "known_hosts",
    "force_unlock",
    "state",
    "controller",
    "debug",
    "check",
    "gpus",
    "catalog",
    "export",
    "cost",
    "cost_report",
    "storage",
    "serve",
    "dashboard",
    # more verbs are added here, one per line
    "not_yet",  # last: SkyPilot verbs no module above provides
)


def register_all(app: typer.Typer) -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"skyform.cli.commands.{name}").register(app)
