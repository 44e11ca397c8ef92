"""`cost diff` / `plan --check` core: what changed between two plans, in inputs and in cost."""

from __future__ import annotations

import json

import pytest
from costkit import edited_fixture, fixture_plan, three_task_plan, tiny_catalog

from skyform.cost.compare import check_plan, compare_plans
from skyform.plan.model import Action, BlockedPlacement, Prior
from skyform.plan.planfile import plan_bytes

PREEMPTED = BlockedPlacement(cloud="cloud-a", zone="a-east-2", spot=True, reason="preempted")


def deltas(cmp):
    return {d.cluster: d for d in cmp.clusters}


def test_same_plan_has_no_changes(tiny):
    plan = three_task_plan(tiny)
    cmp = compare_plans(plan, plan)
    assert cmp.reasons == [] and cmp.changed_clusters == [] and not cmp.totals_changed
    assert {d.kind for d in cmp.clusters} == {"unchanged"}


def test_price_change_of_the_same_offer(tiny, tmp_path):
    """b.gpu.y4 spot 3.00 → 3.50 in a refreshed catalog: same offer, +0.50/h, +5.00 over 10 h."""
    dearer = tiny_catalog(edited_fixture(tmp_path, lambda t: t.replace("12.00,3.00", "12.00,3.50")))
    cmp = compare_plans(three_task_plan(tiny), three_task_plan(dearer))
    assert [r.kind for r in cmp.reasons] == ["catalog"]
    assert [d.cluster for d in cmp.changed_clusters] == ["study-render"]
    render = deltas(cmp)["study-render"]
    assert not render.moved
    assert render.notes == ["price per node $3/h → $3.5/h"]
    assert render.hourly_delta == pytest.approx(0.50)
    assert render.estimated_delta == pytest.approx(5.00)
    t = cmp.totals
    assert (t.hourly_before, t.hourly_after) == (pytest.approx(4.32), pytest.approx(4.82))
    assert (t.estimated_before, t.estimated_after) == (pytest.approx(49.6), pytest.approx(54.6))


def test_revision_with_a_blocked_zone_moves_the_cluster_and_says_why(tiny):
    """A managed-job revision: a-east-2 spot was preempted and blocked; the task moves to
    a-east-1 spot at 0.70 (+0.10/h, +1.00 over 10 h), and the block is shown as new."""
    old = three_task_plan(tiny)
    new = three_task_plan(tiny, blocked=(PREEMPTED,))
    cmp = compare_plans(old, new)
    train = deltas(cmp)["study-train"]
    assert train.moved and train.kind == "changed"
    assert train.after.offer.zone == "a-east-1" and train.after.offer.hourly_price == 0.70
    assert train.hourly_delta == pytest.approx(0.10)
    assert train.estimated_delta == pytest.approx(1.00)
    assert cmp.blocked == [PREEMPTED] and cmp.newly_blocked == [PREEMPTED]
    assert [r.kind for r in cmp.reasons] == ["blocked"]
    # the other two clusters did not move
    assert {d.cluster for d in cmp.changed_clusters} == {"study-train"}


def test_added_and_removed_clusters(tiny):
    one = fixture_plan(tiny, "name: a\nresources: {cpus: 2+}\nrun: x\n", path="a.yaml")
    other = fixture_plan(tiny, "name: b\nresources: {cpus: 8+}\nrun: x\n", path="a.yaml")
    cmp = compare_plans(one, other)
    kinds = {d.cluster: d.kind for d in cmp.clusters}
    assert kinds == {"b": "added", "a": "removed"}
    assert [d.cluster for d in cmp.clusters] == ["b", "a"]  # new plan's order, then the gone
    assert deltas(cmp)["b"].hourly_delta == pytest.approx(0.36)
    assert deltas(cmp)["a"].hourly_delta == pytest.approx(-0.09)
    assert [r.kind for r in cmp.reasons] == ["task"]  # same file digest, different task


def test_action_change_from_state(tiny):
    plan = three_task_plan(tiny)
    moved = plan.model_copy(
        update={
            "prior": Prior(lineage="L", serial=4),
            "changes": [
                c.model_copy(update={"action": Action.NOOP, "reason": "up to date"})
                for c in plan.changes
            ],
        }
    )
    cmp = compare_plans(plan, moved)
    assert [r.message for r in cmp.reasons] == ["the state moved on (serial 0 → 4)"]
    assert all(d.notes == ["action create → noop"] for d in cmp.changed_clusters)
    assert len(cmp.changed_clusters) == 3 and not cmp.totals_changed


def test_reasons_name_what_differs(tiny):
    plan = three_task_plan(tiny)
    other = plan.model_copy(
        update={
            "task": plan.task.model_copy(update={"file_digest": "sha256:" + "9" * 64}),
            "onprem_digest": "sha256:" + "8" * 64,
            "prior": Prior(lineage="new-lineage", serial=0),
            "skyform_version": "9.9.9",
        }
    )
    old = plan.model_copy(update={"prior": Prior(lineage="old-lineage", serial=3)})
    messages = [r.message for r in compare_plans(old, other).reasons]
    assert messages[0].startswith("the task file train.yaml changed (sha256:ffffffffffff")
    assert messages[1].startswith("the local/ssh pool settings in config.yaml changed")
    assert messages[2] == "the state was recreated (lineage old-line → new-line)"
    assert messages[3] == f"made by another skyform ({plan.skyform_version} → 9.9.9)"


def test_objective(tiny):
    cost = three_task_plan(tiny)
    time = three_task_plan(tiny, objective="time")
    reasons = compare_plans(cost, time).reasons
    assert [r.message for r in reasons] == ["the objective differs (--minimize cost → time)"]


def test_check_up_to_date_is_a_byte_comparison(tiny):
    plan = three_task_plan(tiny)
    data = plan_bytes(plan)
    assert check_plan(plan, data, plan, data, label="plan.json").up_to_date
    # the same plan, reformatted by hand: not up to date, and the raw lines say where
    reformatted = (json.dumps(json.loads(data), indent=4, sort_keys=True) + "\n").encode()
    check = check_plan(plan, reformatted, plan, data, label="plan.json")
    assert not check.up_to_date
    assert check.comparison.reasons == [] and check.comparison.changed_clusters == []
    assert check.raw_diff and check.raw_diff[0] == "--- plan.json"


def test_check_explained_difference_has_no_raw_lines(tiny, tmp_path):
    dearer = tiny_catalog(edited_fixture(tmp_path, lambda t: t.replace("12.00,3.00", "12.00,3.50")))
    old, new = three_task_plan(tiny), three_task_plan(dearer)
    check = check_plan(old, plan_bytes(old), new, plan_bytes(new), label="plan.json")
    assert not check.up_to_date and check.raw_diff == []
    assert check.comparison.old_label == "plan.json"


def test_allowed_placements_of_a_failover_revision_are_shown(tiny):
    plan = three_task_plan(tiny)
    only_a_east = BlockedPlacement(cloud="cloud-a", region="a-east", reason="FAILOVER")
    cmp = compare_plans(plan, plan.model_copy(update={"allowed": [only_a_east]}))
    assert [(r.kind, r.message) for r in cmp.reasons] == [
        ("allowed", "the allowed placements differ (0 → 1)")
    ]
    assert cmp.allowed == [only_a_east]
