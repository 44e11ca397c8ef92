"""Golden renderings of every cost view: table (no colour, 100 columns), JSON, markdown, CSV.

Plans come from the real planner on the fixture catalog, so the figures are the hand-checked
ones of test_estimate_fixture.py. Regenerate after an intended change with UPDATE_GOLDEN=1 and
review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from costkit import edited_fixture, three_task_plan, tiny_catalog
from test_usage import INTERVALS, NOW

from skyform.cli.render.console import plain_console
from skyform.cli.render.cost import render_cost, render_cost_csv
from skyform.cli.render.cost_diff import policy_message, render_diff, render_plan_check
from skyform.cli.render.cost_markdown import (
    cost_comment,
    render_diff_markdown,
    render_reprice_markdown,
)
from skyform.cli.render.cost_report import render_cost_report, render_cost_report_csv
from skyform.cli.render.cost_reprice import render_reprice
from skyform.cost.compare import check_plan, compare_plans
from skyform.cost.estimate import plan_cost
from skyform.cost.policy import policy_violations
from skyform.cost.reprice import reprice
from skyform.cost.usage import usage_report
from skyform.plan.model import Action, BlockedPlacement, ClusterChange, Prior
from skyform.plan.planfile import plan_bytes

GOLDEN = Path(__file__).parent / "golden"
PREEMPTED = BlockedPlacement(cloud="cloud-a", zone="a-east-2", spot=True, reason="preempted")
NO_A_EAST_2_GPU = "cloud-a,a.gpu.x1,GPU-X,1,8,64,2.00,0.60,a-east,a-east-2\n"


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    text = "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden {path}; run with UPDATE_GOLDEN=1"
    assert text == path.read_text()


def _json(model) -> str:
    return json.dumps(model.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def _table(render, *args, **kw) -> str:
    console = plain_console(100)
    render(*args, console, **kw)
    return console.file.getvalue()


def plan_on(catalog, **kw):
    """A fixture plan with a fixed version, so goldens survive a version bump."""
    return three_task_plan(catalog, **kw).model_copy(update={"skyform_version": "0.1.0"})


@pytest.fixture
def edited(tmp_path):
    """GPU-Y spot 3.00 → 3.50 and a.gpu.x1 a-east-2 withdrawn."""
    return tiny_catalog(
        edited_fixture(
            tmp_path,
            lambda t: t.replace("12.00,3.00", "12.00,3.50").replace(NO_A_EAST_2_GPU, ""),
        )
    )


# --- skyform cost PLAN -------------------------------------------------------------------------


def test_estimate_formats(tiny):
    plan = plan_on(tiny)
    cost = plan_cost(plan, tiny)
    _check("estimate.txt", _table(render_cost, cost))
    _check("estimate.json", _json(cost))
    _check("estimate.md", cost_comment(plan, cost))
    _check("estimate.csv", render_cost_csv(cost))


def test_estimate_without_an_on_demand_twin(tiny, tmp_path):
    spot_only = tiny_catalog(
        edited_fixture(
            tmp_path,
            lambda t: t.replace(NO_A_EAST_2_GPU, NO_A_EAST_2_GPU.replace("2.00,0.60", ",0.60")),
        )
    )
    cost = plan_cost(plan_on(spot_only), spot_only)
    text = _table(render_cost, cost)
    _check("estimate_no_twin.txt", text)
    assert "n/a for 1 cluster" in text


def test_estimate_of_a_destroy_plan(tiny):
    plan = plan_on(tiny)
    destroy = plan.model_copy(
        update={
            "destroy": True,
            "tasks": [],
            "egress": [],
            "changes": [
                ClusterChange(cluster=c.cluster, action=Action.DELETE, before=c.after, reason="x")
                for c in plan.changes
            ],
            "summary": plan.summary.model_copy(
                update={"hourly_before": 4.32, "hourly_after": 0.0, "estimated_cost": 0.0}
            ),
        }
    )
    _check("estimate_destroy.txt", _table(render_cost, plan_cost(destroy, None)))


# --- skyform cost diff -------------------------------------------------------------------------


def test_diff_of_a_managed_job_revision(tiny, edited):
    """Revision 2: a-east-2 spot was preempted and blocked, and the catalog moved on."""
    old = plan_on(tiny)
    new = plan_on(edited, blocked=(PREEMPTED,), prior=Prior(lineage="lin", serial=4))
    cmp = compare_plans(old, new, old_label="rev1.json", new_label="rev2.json")
    _check("diff.txt", _table(render_diff, cmp))
    _check("diff.md", render_diff_markdown(cmp))
    _check("diff.json", _json(cmp))


def test_diff_without_changes(tiny):
    plan = plan_on(tiny)
    text = _table(render_diff, compare_plans(plan, plan, old_label="a.json", new_label="b.json"))
    _check("diff_none.txt", text)


# --- skyform cost reprice ----------------------------------------------------------------------


def test_reprice_formats(tiny, edited):
    result = reprice(plan_on(tiny), edited).model_copy(update={"catalog_path": "/catalogs/new"})
    _check("reprice.txt", _table(render_reprice, result))
    _check("reprice.md", render_reprice_markdown(result))
    _check("reprice.json", _json(result))


# --- skyform plan --check and the cost policy ----------------------------------------------------


def test_check_up_to_date(tiny):
    plan = plan_on(tiny)
    data = plan_bytes(plan)
    check = check_plan(plan, data, plan, data, label="plan.json")
    text = _table(render_plan_check, check, plan_path="plan.json", replan="skyform plan t.yaml")
    _check("check_ok.txt", text)


def test_check_out_of_date(tiny, edited):
    old, new = plan_on(tiny), plan_on(edited, prior=Prior(lineage="lin", serial=2))
    check = check_plan(old, plan_bytes(old), new, plan_bytes(new), label="plan.json")
    replan = "skyform plan train.yaml -o plan.json"
    _check(
        "check_stale.txt", _table(render_plan_check, check, plan_path="plan.json", replan=replan)
    )


def test_check_hand_edited(tiny):
    plan = plan_on(tiny)
    data = plan_bytes(plan)
    edited = data.replace(b'"objective": "cost"', b'"objective":"cost"')
    check = check_plan(plan, edited, plan, data, label="plan.json")
    replan = "skyform plan train.yaml -o plan.json"
    _check("check_raw.txt", _table(render_plan_check, check, plan_path="plan.json", replan=replan))


def test_policy_message(tiny):
    found = policy_violations(plan_on(tiny), max_hourly=4, max_total=45)
    _check("policy.txt", policy_message(found))


# --- skyform cost-report ---------------------------------------------------------------------


def test_cost_report_formats():
    report = usage_report(
        INTERVALS,
        now=NOW,
        cluster_status={"ft": "UP"},
        job_names={7: "finetune"},
        job_recoveries={7: 1},  # the managed job's own count, as `jobs queue` shows it
    )
    _check("cost_report.txt", _table(render_cost_report, report))
    _check("cost_report.csv", render_cost_report_csv(report))
    _check("cost_report.json", _json(report))


def test_cost_report_empty():
    text = _table(render_cost_report, usage_report([], now=NOW, since=NOW - 7 * 86400))
    _check("cost_report_empty.txt", text)


AUTOSTOP_TASK = """\
name: tune
resources: {accelerators: GPU-X:1, autostop: 10}
skyform: {estimated_hours: 3}
run: x
"""


def test_estimate_bounded_by_autostop(tiny):
    """3 h of job + 10 idle minutes + one 1-minute agent check = 3 h 11 min of compute at
    most; worked by hand below from the catalog row, then kept as a golden."""
    from costkit import fixture_plan

    plan = fixture_plan(tiny, AUTOSTOP_TASK).model_copy(update={"skyform_version": "0.1.0"})
    cost = plan_cost(plan, tiny)
    (tune,) = cost.clusters
    # the cheapest on-demand GPU-X:1 of fixtures_tiny.csv: cloud-b b.gpu.x1 b-south, $1.80/h
    assert (tune.offer.cloud, tune.offer.region, tune.hourly_cost) == ("cloud-b", "b-south", 1.8)
    assert tune.compute_cost == 5.4  # 3 h x $1.80
    assert tune.idle_hours == round(11 / 60, 6)  # 0.183333 h
    assert tune.compute_bound == 5.73  # 3.183333 h x $1.80 = $5.73
    text = _table(render_cost, cost)
    assert "Autostop 10m on tune: compute at most $5.73 (3 h of job + 11 min idle" in text
    _check("estimate_autostop.txt", text)
    _check("estimate_autostop.json", _json(cost))
