"""`skyform check` output."""

from __future__ import annotations

from rich.markup import escape

from skyform.cli.render.console import make_console
from skyform.cli.render.output import print_json
from skyform.stacks.health import InfraStatus


def render_check(results: list[InfraStatus], *, as_json: bool) -> None:
    if as_json:
        print_json([r.to_dict() for r in results])
        return
    console = make_console()
    console.print("Checking which infra skyform can use on this machine:\n")
    for r in results:
        mark = "[green]✔[/]" if r.usable else "[red]✘[/]"
        console.print(f"  {mark} [bold]{escape(r.name)}[/]: {escape(r.detail)}")
        for item in r.items:
            console.print(f"      {escape(item)}")
        if r.hint:
            console.print(f"      [yellow]hint:[/] {escape(r.hint)}")
    usable = [r.name for r in results if r.usable and r.name != "pulumi"]
    console.print(f"\nUsable infra: {', '.join(usable) or 'none'}")
