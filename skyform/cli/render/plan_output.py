"""Print a plan in the format a command was asked for. Each format's renderer is imported
only when that format is asked for: --json and --markdown draw nothing and need no rich."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skyform.plan.model import Plan


def emit_plan(
    plan: Plan, *, as_json: bool = False, markdown: bool = False, saved_to: str | None = None
) -> None:
    if as_json:
        from skyform.plan.planfile import plan_bytes

        sys.stdout.write(plan_bytes(plan).decode())
    elif markdown:
        from skyform.cli.render.plan_markdown import render_plan_markdown

        sys.stdout.write(render_plan_markdown(plan))
    else:
        from skyform.cli.render.console import make_console
        from skyform.cli.render.plan import render_plan

        render_plan(plan, make_console(), saved_to=saved_to)
