"""The offers a plan shows are the catalog's (issue 26: the plan applied is the plan shown,
prices included). A plan edited to show another price, or another machine, everywhere it
names it and with every digest recomputed, is consistent in itself: only the catalog it
was priced from — still the one in use, or the plan is stale — tells. apply refuses it
before anything exists."""

from __future__ import annotations

import copy
import json

import pytest
from realplans import make_plans, reseal, write_json
from reviewmutations import repriced

CORRUPT = "plan is corrupt or was edited: tasks.0.offer: not an offer of the catalog"


def _swapped(raw: dict) -> None:
    """A dearer machine of the catalog under the chosen offer's price, everywhere."""
    from skyform.config import load_config
    from skyform.plan.catalog import load_catalog
    from skyform.plan.specs import placed

    chosen = copy.deepcopy(raw["tasks"][0]["offer"])
    found = load_catalog(load_config()).query(
        cloud=chosen["cloud"], region=chosen["region"], cpus=16, spot=False
    )
    dearer = placed(next(o for o in found if o.hourly_price > chosen["hourly_price"]))
    swapped = {**dearer.model_dump(mode="json"), "hourly_price": chosen["hourly_price"]}
    stack: list = [raw]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if value == chosen:
                value.update(swapped)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


@pytest.mark.parametrize(
    ("kind", "edit"),
    [("aws", repriced), ("aws", _swapped), ("local", repriced)],  # local has one offer
    ids=["aws-price", "aws-machine", "local-price"],
)
def test_an_offer_edited_everywhere_is_refused(cli, skyform_home, tmp_path, kind, edit):
    plans = make_plans(cli, skyform_home, tmp_path)
    raw = json.loads(plans[kind].read_text())
    edit(raw)
    path = write_json(plans[kind].with_name("edited.json"), reseal(raw))
    assert cli("show", path).exit_code == 0  # consistent: only the catalog tells
    before = sorted(p.name for p in skyform_home.rglob("*"))
    flags = ["--secret", "TOKEN=x"] if kind == "local" else []
    result = cli("apply", path, "-y", *flags)
    assert result.exit_code == 1, result.output
    assert CORRUPT in result.stderr
    assert sorted(p.name for p in skyform_home.rglob("*")) == before
