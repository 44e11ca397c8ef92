"""A verb with subcommands (`skyform catalog show`, `skyform state migrate`, ...): one Typer
sub-app, set up the same way for every such verb."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer


def verb_group(
    name: str, help: str, **settings: Any
) -> tuple[typer.Typer, Callable[[typer.Typer], None]]:
    """The sub-app for `skyform NAME SUB ...` (its help shown when no SUB is given) and the
    `register(app)` that adds it under NAME."""
    group = typer.Typer(help=help, no_args_is_help=True, **settings)

    def register(app: typer.Typer) -> None:
        app.add_typer(group, name=name)

    return group, register
