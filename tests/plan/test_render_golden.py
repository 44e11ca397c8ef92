"""Golden renderings of plans: Terraform-style text (no colour, 100 columns) and markdown.

Regenerate after an intended change with UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from factory import create_plan
from render_cases import CASES

from skyform.cli.render.console import plain_console
from skyform.cli.render.lines import RichPrinter
from skyform.cli.render.plan import render_plan
from skyform.cli.render.plan_markdown import render_plan_markdown

GOLDEN = Path(__file__).parent / "golden"


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    text = "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden {path}; run with UPDATE_GOLDEN=1"
    assert text == path.read_text()


@pytest.mark.parametrize("case", sorted(CASES))
def test_human_rendering(case):
    console = plain_console(100)
    render_plan(CASES[case](), RichPrinter(console), saved_to="plan.json")
    _check(f"{case}.txt", console.file.getvalue())


@pytest.mark.parametrize("case", sorted(CASES))
def test_markdown_rendering(case):
    _check(f"{case}.md", render_plan_markdown(CASES[case]()))


def test_legend_lists_only_symbols_used():
    console = plain_console(100)
    render_plan(create_plan(), RichPrinter(console))
    out = console.file.getvalue()
    assert "  + create" in out
    assert "update in-place" not in out and "destroy" not in out.split("Plan:")[0]
