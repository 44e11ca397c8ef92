"""`plan` and `show` draw their text without rich when stdout is no terminal
(skyform/cli/render/lines.py): the plain printer must print byte for byte what rich prints,
and hand anything it cannot measure back to rich rather than print it differently."""

from __future__ import annotations

import pytest
from factory import placement, plan, spec
from render_cases import CASES

from skyform.cli.render.console import plain_console
from skyform.cli.render.lines import NeedsRich, PlainPrinter, RichPrinter, escape
from skyform.cli.render.plan import render_plan
from skyform.plan.model import Action, ClusterChange


def by_rich(case, width: int) -> str:
    console = plain_console(width)
    render_plan(case, RichPrinter(console), saved_to="plan.json")
    return console.file.getvalue()


def by_plain(case, width: int) -> str | None:
    printer = PlainPrinter(width)
    try:
        render_plan(case, printer, saved_to="plan.json")
    except NeedsRich:
        return None
    return printer.text()


@pytest.mark.parametrize("width", [120, 200])
@pytest.mark.parametrize("case", sorted(CASES))
def test_plain_text_is_what_rich_prints(case, width):
    assert by_plain(CASES[case](), width) == by_rich(CASES[case](), width)


@pytest.mark.parametrize("width", [40, 60, 80, 99, 100])
@pytest.mark.parametrize("case", sorted(CASES))
def test_what_rich_would_wrap_or_fold_is_left_to_rich(case, width):
    plain = by_plain(CASES[case](), width)
    assert plain is None or plain == by_rich(CASES[case](), width)


@pytest.mark.parametrize(
    "name", ["train[gpu]", "back\\slash", "wide-名前", "tab\there", "[bold]x[/]", "a\\"]
)
def test_user_text_rich_would_measure_or_unescape_goes_to_rich(name):
    changes = [ClusterChange(cluster="c", action=Action.CREATE, reason=name, after=spec("c"))]
    case = plan(changes, [placement("c"), placement(name, index=1)], add=1)
    plain = by_plain(case, 120)
    assert plain is None or plain == by_rich(case, 120)


@pytest.mark.parametrize("text", ["[bold]", "a\\[b]", "x\\", "[/]", "plain", "[x", "\\\\[y]"])
def test_escape_is_richs(text):
    from rich.markup import escape as rich_escape

    assert escape(text) == rich_escape(text)
