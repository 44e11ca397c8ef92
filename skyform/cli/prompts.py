"""Asking the user before changing anything."""

from __future__ import annotations

import sys

import typer


def confirm(question: str, yes: bool, *, hint: str = "Pass -y to go ahead without asking.") -> None:
    """Terraform's rule: only the word `yes` approves; without a terminal, -y is required."""
    from skyform.errors import SkyformError

    if yes:
        return
    if not sys.stdin.isatty():
        raise SkyformError(
            f"{question.rstrip('?')}: needs confirmation, but stdin is not a terminal",
            hint,
        )
    from skyform.cli.render.visible import visible

    answer = typer.prompt(  # the question may name text from a plan: shown, not acted on
        f"\n{visible(question)} Only 'yes' will be accepted", default="", show_default=False
    )
    if answer.strip() != "yes":
        typer.echo("Cancelled: nothing was changed.")
        raise typer.Exit(1)


def confirm_on_terminal(question: str, yes: bool = False) -> None:
    """SkyPilot's habit for `jobs launch` / `jobs cancel`: ask on a terminal, go ahead in a
    script (scripts and CI written for `sky jobs launch` keep working without -y)."""
    if yes or not sys.stdin.isatty():
        return
    confirm(question, yes)
