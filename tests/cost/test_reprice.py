"""`skyform cost reprice`: drift per offer, and offers that no longer exist — never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from costkit import dearer_g6_without_m7a, edited_fixture, three_task_plan, tiny_catalog, v8_catalog

from skyform.config import Config
from skyform.cost.reprice import location_of, reprice
from skyform.ops.plan import plan_task
from skyform.plan.catalog import Location, load_catalog

REPO = Path(__file__).resolve().parents[2]

A_EAST_2_GPU = "cloud-a,a.gpu.x1,GPU-X,1,8,64,2.00,0.60,a-east,a-east-2\n"


def by_cluster(result):
    return {c.cluster: c for c in result.clusters}


def test_same_catalog_has_no_drift(tiny):
    result = reprice(three_task_plan(tiny), tiny)
    assert {c.status for c in result.clusters} == {"same"}
    assert result.new_total == result.old_total == pytest.approx(49.60)
    assert result.catalog_digest == result.plan_catalog_digest


def test_changed_price_and_removed_offer(tiny, tmp_path):
    """GPU-Y spot 3.00 → 3.50 (+0.50/h × 10 h) and a.gpu.x1 a-east-2 withdrawn: the first
    drifts, the second is reported missing and keeps its planned 6.00 in the total."""
    edited = edited_fixture(
        tmp_path, lambda t: t.replace("12.00,3.00", "12.00,3.50").replace(A_EAST_2_GPU, "")
    )
    result = reprice(three_task_plan(tiny), tiny_catalog(edited))
    rows = by_cluster(result)
    render, train, report = rows["study-render"], rows["study-train"], rows["study-report"]
    assert (render.status, render.old_hourly_price, render.new_hourly_price) == (
        "changed",
        3.00,
        3.50,
    )
    assert (render.old_cost, render.new_cost) == (pytest.approx(30.00), pytest.approx(35.00))
    assert train.status == "missing" and train.new_hourly_price is None and train.new_cost is None
    assert train.offer_id == "cloud-a/a-east/a-east-2/a.gpu.x1/spot"
    assert report.status == "same" and report.new_cost == pytest.approx(3.60)
    assert [c.cluster for c in result.missing] == ["study-train"]
    assert result.old_total == pytest.approx(49.60)
    assert result.new_total == pytest.approx(6.00 + 35.00 + 3.60 + 10.00)
    assert result.catalog_digest != result.plan_catalog_digest


def test_egress_is_priced_again(tiny):
    result = reprice(three_task_plan(tiny), tiny)
    (flow,) = result.egress
    assert (flow.flow.dst_task, flow.flow.cost, flow.new_cost) == ("render", 10.0, 10.0)


def test_v8_directory_with_a_dearer_offer_and_a_missing_one(tmp_path):
    """A modified catalog directory in SkyPilot's v8 layout, as `load_catalog(source=DIR)`
    reads it: the spot price of the chosen g6.xlarge rose, the chosen m7a.xlarge is gone."""
    plan = plan_task(REPO / "examples" / "pipeline.yaml").plan
    catalog = load_catalog(Config(), source=v8_catalog(tmp_path / "v8", dearer_g6_without_m7a))
    result = reprice(plan, catalog)
    rows = by_cluster(result)
    train, evaluate = rows["train-pipeline-train"], rows["train-pipeline-eval"]
    assert (train.old_hourly_price, train.new_hourly_price) == (0.2599, 0.31)
    assert train.new_cost == pytest.approx(0.31 * 6)
    assert evaluate.status == "missing"
    assert rows["train-pipeline-preprocess"].status == "same"  # GCP untouched
    assert result.catalog_kind == "directory"


@pytest.mark.parametrize(
    ("infra", "location"),
    [
        ("aws", Location("aws")),
        ("cloud-a/a-east", Location("cloud-a", "a-east")),
        ("gcp/us-central1/us-central1-a", Location("gcp", "us-central1", "us-central1-a")),
    ],
)
def test_location_of_inverts_the_planner_infra(infra, location):
    assert location_of(infra) == location
