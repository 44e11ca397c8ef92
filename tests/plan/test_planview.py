"""The strict reader of `show`'s fast path (skyform/plan/planview.py) reads plans without
pydantic. Whatever it accepts, the app's reader (plan/planfile.py) must accept as the same
plan and print the same bytes from: --json, --markdown and the text (plain and rich). What
it cannot answer exactly it leaves to the app (None / Unsure), never a different answer.

Checked on every golden plan, on real plans, and on the issue-11 mutation suite with each
edit resealed (content digest, and job digests where they can be made again) as a careful
tamperer would: the edits the app refuses must not be shown, the ones it takes (a reason
reworded and resealed is a valid plan) must be shown identically."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from mutations import mutations
from realplans import make_plans, reseal
from render_cases import CASES
from test_plain_printer import by_plain, by_rich

from skyform.cli.render.plan_markdown import render_plan_markdown
from skyform.errors import PlanFileError
from skyform.plan import planschema
from skyform.plan.planfile import DIGEST_KEY, dumps, parse_plan, plan_bytes, plan_digest
from skyform.plan.planview import Unsure, plan_view, view_of

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from build_plan_schema import schema


def answers(plan) -> tuple:
    """What `show` prints of a plan: markdown, the text to a pipe, the text drawn by rich."""
    return render_plan_markdown(plan), by_plain(plan, 200), by_rich(plan, 100)


def app_read(data: bytes):
    try:
        return parse_plan(data, "plan.json")
    except PlanFileError:
        return None


def fast_read(data: bytes):
    try:
        return view_of(data, "plan.json")
    except (Unsure, PlanFileError):
        return None


def same_or_left_to_the_app(data: bytes) -> str:
    """What the fast path does with a plan file: "shown" exactly as the app shows it, or
    "left" to the app, which reads it, or "refused": left to the app, which refuses it."""
    view, plan = fast_read(data), app_read(data)
    if view is None:
        return "left" if plan is not None else "refused"
    assert plan is not None, "the fast reader shows a plan the app refuses"
    assert plan_bytes(plan) == data, "--json would print other bytes than the app"
    assert answers(view) == answers(plan)
    return "shown"


def test_the_saved_schema_is_the_models():
    """Fails after a model change until `scripts/build_plan_schema.py` is run again."""
    models, omitted = schema()
    assert (models, omitted) == (planschema.MODELS, planschema.OMITTED)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_golden_plan_draws_as_the_app_draws_it(case):
    """Views of the golden plans draw them byte for byte (most golden plans are built by
    hand and fail the loader's cross-checks; those the app reads, the fast path shows)."""
    plan = CASES[case]()
    data = plan_bytes(plan)
    raw = json.loads(data)
    raw.pop(DIGEST_KEY)
    assert answers(plan_view(raw)) == answers(plan)
    assert same_or_left_to_the_app(data) == ("shown" if app_read(data) else "refused")


def _resealed(text: str) -> bytes | None:
    """The edited plan made self-consistent again (job digests too, where the job still
    reads), in canonical bytes; None when it is no JSON object at all."""
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    try:
        raw = reseal(raw)
    except Exception:  # a job or plan the models refuse: only the content digest is new
        raw = {k: v for k, v in raw.items() if k != DIGEST_KEY}
        try:
            raw[DIGEST_KEY] = plan_digest(dumps(raw))
        except (TypeError, ValueError, UnicodeError):
            return None
    try:
        return dumps(raw)
    except (TypeError, ValueError, UnicodeError):
        return None


def test_real_plans_and_every_resealed_edit_of_them(cli, skyform_home, tmp_path):
    plans = make_plans(cli, skyform_home, tmp_path)
    outcomes: Counter[str] = Counter()
    for kind, path in plans.items():
        assert same_or_left_to_the_app(path.read_bytes()) == "shown", kind
        for label, text in mutations(json.loads(path.read_text())):
            assert fast_read(text.encode()) is None or app_read(text.encode()), (kind, label)
            data = _resealed(text)
            if data is None:
                continue
            try:
                outcomes[same_or_left_to_the_app(data)] += 1
            except AssertionError as err:
                raise AssertionError(f"{kind}: {label}: {err}") from None
    print(f"\n{dict(outcomes)}")
    assert outcomes["shown"] >= 1000 and outcomes["refused"] >= 3000


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda raw: raw.update(format_version=3), "a newer format version"),
        (lambda raw: raw["summary"].update(add=True), "a bool for an int"),
        (lambda raw: raw["summary"].update(add=1.0), "a float for an int"),
        (lambda raw: raw["tasks"][0]["offer"].update(vcpus=2), "an int for a float"),
        (lambda raw: raw["tasks"][0].update(hourly_cost=0.1234567), "money not rounded"),
        (lambda raw: raw.update(buckets=[]), "a field the model leaves out, written"),
        (lambda raw: raw["prior"].pop("serial"), "a field the model writes, left out"),
        (lambda raw: raw["prior"].update(extra=1), "a field the model has not"),
        (lambda raw: raw["changes"][0].update(action="explode"), "an action that is none"),
    ],
)
def test_edits_resealed_are_left_to_the_app(edit, why):
    raw = json.loads(plan_bytes(CASES["create"]()))
    edit(raw)
    raw.pop(DIGEST_KEY)
    raw[DIGEST_KEY] = plan_digest(dumps(raw))
    assert fast_read(dumps(raw)) is None, why


def test_bytes_other_than_the_canonical_ones_are_left_to_the_app():
    data = plan_bytes(CASES["create"]())
    assert fast_read(data) is not None
    assert fast_read(json.dumps(json.loads(data)).encode()) is None  # same JSON, one line
    assert fast_read(data.replace(b"\n", b"\r\n")) is None
