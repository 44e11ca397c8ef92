"""Warnings and notes on stderr, so stdout stays clean for --json and markdown. rich is
imported only when there is one to print: most runs have none."""

from __future__ import annotations

from skyform.cli.render.console import make_console


def print_warnings(warnings: list[str]) -> None:
    if not warnings:
        return
    from rich.markup import escape

    console = make_console(stderr=True)
    for warning in warnings:
        console.print(f"[yellow]Warning:[/] {escape(warning)}", soft_wrap=True)


def print_notes(notes: list[str]) -> None:
    """What a user should know about the output they got (which job it was, why it is
    empty), on stderr."""
    if not notes:
        return
    from rich.markup import escape

    console = make_console(stderr=True)
    for note in notes:
        console.print(f"[cyan]Note:[/] {escape(note)}", soft_wrap=True)
