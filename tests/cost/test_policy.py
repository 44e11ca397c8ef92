"""`--max-hourly-cost` / `--max-total-cost`: the figures compared and the clusters named."""

from __future__ import annotations

import pytest
from costkit import three_task_plan

from skyform.cost.policy import policy_violations


def test_within_limits_and_at_the_limit(tiny):
    plan = three_task_plan(tiny)  # 4.32/h, 49.60 in total
    assert policy_violations(plan) == []
    assert policy_violations(plan, max_hourly=4.32, max_total=49.60) == []


def test_hourly_limit_names_clusters_most_expensive_first(tiny):
    (v,) = policy_violations(three_task_plan(tiny), max_hourly=4.0)
    assert (v.option, v.hourly, v.limit) == ("--max-hourly-cost", True, 4.0)
    assert v.actual == pytest.approx(4.32)
    assert v.clusters == (("study-render", 3.0), ("study-report", 0.72), ("study-train", 0.6))


def test_total_limit_counts_egress(tiny):
    (v,) = policy_violations(three_task_plan(tiny), max_total=45)
    assert (v.option, v.actual, v.egress) == ("--max-total-cost", pytest.approx(49.6), 10.0)
    assert [name for name, _ in v.clusters] == ["study-render", "study-train", "study-report"]


def test_both_limits(tiny):
    found = policy_violations(three_task_plan(tiny), max_hourly=1, max_total=1)
    assert [v.option for v in found] == ["--max-hourly-cost", "--max-total-cost"]


def test_destroy_plan_never_violates(tiny):
    plan = three_task_plan(tiny).model_copy(update={"destroy": True})
    assert policy_violations(plan, max_hourly=0, max_total=0) == []
