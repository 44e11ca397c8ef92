"""Print a plan in the format a command was asked for. Each format's renderer is imported
only when that format is asked for: --json and --markdown draw nothing and need no rich, nor
does the text when stdout is no terminal (cli/render/lines.py)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from skyform.ops.preview import ClusterPreview
    from skyform.plan.model import Plan

PREVIEW_KEY = "engine_preview"  # beside the plan's keys in --json; never in a plan file


def emit_plan(
    plan: Plan,
    *,
    as_json: bool = False,
    markdown: bool = False,
    saved_to: str | None = None,
    previews: Sequence[ClusterPreview] | None = None,
) -> None:
    """The plan, and with `previews` (`plan --preview`) the engine's preview of it."""
    if as_json:
        from skyform.cli.render.visible import json_visible
        from skyform.plan.planfile import plan_bytes

        data = plan_bytes(plan)
        if previews is not None:
            data = _with_previews(data, previews)
        sys.stdout.write(json_visible(data.decode()))
    elif markdown:
        from skyform.cli.render.plan_markdown import render_plan_markdown

        sections: list[str] = []
        if previews is not None:
            from skyform.cli.render.plan_preview import markdown_lines

            sections = markdown_lines(previews)
        sys.stdout.write(render_plan_markdown(plan, sections=sections))
    else:
        print_plan_text(plan, saved_to=saved_to, previews=previews)


def _with_previews(data: bytes, previews: Sequence[ClusterPreview]) -> bytes:
    """The plan's JSON (its own keys and digest, as the plan file has them) with the preview
    under one more key, which the digest does not cover."""
    import json

    from skyform.cli.render.plan_preview import json_data
    from skyform.plan.planjson import dumps

    document = json.loads(data)
    document[PREVIEW_KEY] = json_data(previews)
    return dumps(document)


def print_plan_text(
    plan: Plan, *, saved_to: str | None = None, previews: Sequence[ClusterPreview] | None = None
) -> None:
    """The Terraform-style text; drawn without rich when stdout is no terminal and nothing
    needs rich's measuring (cli/render/lines.py), else by rich straight to stdout."""
    from skyform.cli.render.lines import NeedsRich, PlainPrinter, RichPrinter, plain_width
    from skyform.cli.render.plan import render_plan

    width = plain_width()
    if width is not None:
        plain = PlainPrinter(width)
        try:
            render_plan(plan, plain, saved_to=saved_to, previews=previews)
        except NeedsRich:
            pass
        else:
            sys.stdout.write(plain.text())
            return
    from skyform.cli.render.console import make_console

    render_plan(plan, RichPrinter(make_console()), saved_to=saved_to, previews=previews)
