"""Print a plan in the format a command was asked for."""

from __future__ import annotations

import sys

from skyform.cli.render.console import make_console
from skyform.cli.render.plan import render_plan
from skyform.cli.render.plan_markdown import render_plan_markdown
from skyform.plan.model import Plan
from skyform.plan.planfile import plan_bytes


def emit_plan(
    plan: Plan, *, as_json: bool = False, markdown: bool = False, saved_to: str | None = None
) -> None:
    if as_json:
        sys.stdout.write(plan_bytes(plan).decode())
    elif markdown:
        sys.stdout.write(render_plan_markdown(plan))
    else:
        render_plan(plan, make_console(), saved_to=saved_to)
