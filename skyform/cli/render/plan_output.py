"""Print a plan in the format a command was asked for. Each format's renderer is imported
only when that format is asked for: --json and --markdown draw nothing and need no rich, nor
does the text when stdout is no terminal (cli/render/lines.py)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skyform.plan.model import Plan


def emit_plan(
    plan: Plan, *, as_json: bool = False, markdown: bool = False, saved_to: str | None = None
) -> None:
    if as_json:
        from skyform.cli.render.visible import json_visible
        from skyform.plan.planfile import plan_bytes

        sys.stdout.write(json_visible(plan_bytes(plan).decode()))
    elif markdown:
        from skyform.cli.render.plan_markdown import render_plan_markdown

        sys.stdout.write(render_plan_markdown(plan))
    else:
        print_plan_text(plan, saved_to=saved_to)


def print_plan_text(plan: Plan, *, saved_to: str | None = None) -> None:
    """The Terraform-style text; drawn without rich when stdout is no terminal and nothing
    needs rich's measuring (cli/render/lines.py), else by rich straight to stdout."""
    from skyform.cli.render.lines import NeedsRich, PlainPrinter, RichPrinter, plain_width
    from skyform.cli.render.plan import render_plan

    width = plain_width()
    if width is not None:
        plain = PlainPrinter(width)
        try:
            render_plan(plan, plain, saved_to=saved_to)
        except NeedsRich:
            pass
        else:
            sys.stdout.write(plain.text())
            return
    from skyform.cli.render.console import make_console

    render_plan(plan, RichPrinter(make_console()), saved_to=saved_to)
