"""How a SkyformError looks on the terminal: where, what, and what to do."""

from __future__ import annotations

from rich.markup import escape

from skyform.cli.render.console import make_console
from skyform.errors import Interrupted, SkyformError, SpecError


def format_error(err: SkyformError) -> list[str]:
    """Plain lines (no markup) for an error; shared by the terminal and --json paths."""
    head = err.message
    if isinstance(err, SpecError):
        where = err.location
        field = f"{err.field}: " if err.field else ""
        head = f"{where + ': ' if where else ''}{field}{err.message}"
    # Ctrl-C is the user's own doing, not an error: say what it left, and what to do
    lines = [head if isinstance(err, Interrupted) else f"Error: {head}"]
    if err.hint:
        lines.append(f"Hint: {err.hint}")
    return lines


def render_error(err: SkyformError) -> None:
    console = make_console(stderr=True)
    first, *rest = format_error(err)
    style = "bold yellow" if isinstance(err, Interrupted) else "bold red"
    console.print(f"[{style}]{escape(first)}[/]", soft_wrap=True)
    for line in rest:
        console.print(f"[yellow]{escape(line)}[/]", soft_wrap=True)
