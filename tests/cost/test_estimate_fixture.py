"""`skyform cost PLAN` figures against values worked out by hand on the fixture catalog.

Fixture prices (shared/catalog/README.md): a.gpu.x1 spot a-east-2 0.60, on-demand 2.00;
b.gpu.y4 spot b-north-1 3.00, on-demand 12.00; b.cpu.large on-demand b-north-1 0.36;
cloud-a internet egress 0.10/GB, same region free.
"""

from __future__ import annotations

import pytest
from costkit import edited_fixture, fixture_plan, three_task_plan, tiny_catalog

from skyform.cost.estimate import needs_catalog, on_demand_twin, plan_cost
from skyform.plan.model import Action


def by_cluster(cost):
    return {c.cluster: c for c in cost.clusters}


def test_spot_gpu_x_near_its_data(tiny):
    """1× GPU-X spot a-east-2: 0.60 × 10 h = 6.00; on-demand twin 2.00 × 10 = 20 → saves 14;
    its 100 GB of input sit in a-east already: no egress."""
    c = by_cluster(plan_cost(three_task_plan(tiny), tiny))["study-train"]
    assert (c.offer.instance_type, c.offer.zone, c.offer.spot) == ("a.gpu.x1", "a-east-2", True)
    assert c.hourly_cost == 0.60 and c.estimated_hours == 10
    assert c.compute_cost == pytest.approx(6.00)
    assert c.egress_gb == 0 and c.egress_cost == 0
    assert c.total_cost == pytest.approx(6.00)
    assert c.on_demand_hourly_cost == pytest.approx(2.00)
    assert c.spot_saving == pytest.approx(14.00)


def test_spot_gpu_y_pays_egress_for_its_inputs(tiny):
    """4× GPU-Y spot b-north-1: 3.00 × 10 = 30.00, plus 100 GB from a-east at the cloud-a
    internet rate 0.10 = 10.00 → 40.00; on-demand twin 12.00 × 10 = 120 → saves 90."""
    c = by_cluster(plan_cost(three_task_plan(tiny), tiny))["study-render"]
    assert (c.offer.instance_type, c.offer.zone) == ("b.gpu.y4", "b-north-1")
    assert c.compute_cost == pytest.approx(30.00)
    assert (c.egress_gb, c.egress_cost) == (100, pytest.approx(10.00))
    assert c.total_cost == pytest.approx(40.00)
    assert c.spot_saving == pytest.approx(90.00)


def test_on_demand_cluster_has_no_spot_saving(tiny):
    """2 nodes of b.cpu.large on-demand: 0.36 × 2 × 5 h = 3.60; not spot → no saving."""
    c = by_cluster(plan_cost(three_task_plan(tiny), tiny))["study-report"]
    assert (c.offer.instance_type, c.num_nodes, c.offer.spot) == ("b.cpu.large", 2, False)
    assert c.hourly_cost == pytest.approx(0.72)
    assert c.compute_cost == pytest.approx(3.60)
    assert c.on_demand_hourly_cost is None and c.spot_saving is None


def test_totals(tiny):
    cost = plan_cost(three_task_plan(tiny), tiny)
    t = cost.totals
    assert t.hourly_after == pytest.approx(0.60 + 3.00 + 0.72)
    assert t.compute_cost == pytest.approx(6.00 + 30.00 + 3.60)
    assert t.egress_cost == pytest.approx(10.00)
    assert t.total_cost == pytest.approx(49.60)
    assert t.spot_saving == pytest.approx(14.00 + 90.00)
    assert t.spot_saving_unknown == 0
    assert all(c.action is Action.CREATE for c in cost.clusters)
    assert not cost.twins_from_other_catalog


def test_spot_without_an_on_demand_twin_is_not_applicable(tiny, tmp_path):
    """A catalog that sells a.gpu.x1 in a-east-2 only on spot has no twin: saving n/a (None),
    counted apart in the totals, never guessed from another zone."""
    csv = edited_fixture(
        tmp_path,
        lambda t: t.replace(
            "a.gpu.x1,GPU-X,1,8,64,2.00,0.60,a-east,a-east-2",
            "a.gpu.x1,GPU-X,1,8,64,,0.60,a-east,a-east-2",
        ),
    )
    catalog = tiny_catalog(csv)
    cost = plan_cost(three_task_plan(catalog), catalog)
    train = by_cluster(cost)["study-train"]
    assert train.offer.zone == "a-east-2" and train.offer.spot
    assert train.on_demand_hourly_cost is None and train.spot_saving is None
    assert cost.totals.spot_saving == pytest.approx(90.00)  # GPU-Y's only
    assert cost.totals.spot_saving_unknown == 1


def test_twin_is_the_same_zone_and_instance_type(tiny):
    plan = fixture_plan(tiny, "resources: {accelerators: GPU-X:1, use_spot: true}\nrun: x\n")
    offer = plan.tasks[0].offer
    assert (offer.cloud, offer.zone, offer.hourly_price) == ("cloud-b", "b-north-1", 0.50)
    twin = on_demand_twin(tiny, offer)
    assert twin is not None
    assert (twin.cloud, twin.zone, twin.instance_type, twin.spot, twin.hourly_price) == (
        "cloud-b",
        "b-north-1",
        "b.gpu.x1",
        False,
        2.50,  # not b-south's 1.80, the cheapest on-demand GPU-X
    )
    assert on_demand_twin(tiny, plan.tasks[0].offer.model_copy(update={"spot": False})) is None


def test_twins_from_another_catalog_are_flagged(tiny, tmp_path):
    other = tiny_catalog(
        edited_fixture(tmp_path, lambda t: t.replace("2.50,0.50,b-north", "2.60,0.50,b-north"))
    )
    plan = fixture_plan(tiny, "resources: {accelerators: GPU-X:1, use_spot: true}\nrun: x\n")
    cost = plan_cost(plan, other)
    assert cost.twins_from_other_catalog
    assert cost.clusters[0].spot_saving == pytest.approx(2.60 - 0.50)


def test_only_spot_plans_need_a_catalog(tiny):
    on_demand = fixture_plan(tiny, "resources: {cpus: 8+}\nrun: x\n")
    assert not needs_catalog(on_demand)
    assert needs_catalog(three_task_plan(tiny))
    cost = plan_cost(on_demand, None)
    assert cost.clusters[0].compute_cost == pytest.approx(0.36)
    assert cost.twin_catalog_digest is None
