"""Every expected answer of the fixture catalog (shared/catalog/README.md), through `optimize`."""

from __future__ import annotations

import pytest
from optimizer_helpers import dag_of, with_inputs_at

from skyform.plan.optimizer import optimize

# (resources, spot) -> (instance type, zone, hourly price), from the README's table
EXPECTED = [
    ("accelerators: GPU-X:1", False, ("b.gpu.x1", "b-south-1", 1.80)),
    ("accelerators: GPU-X:1", True, ("b.gpu.x1", "b-north-1", 0.50)),
    ("accelerators: GPU-X:8", False, ("a.gpu.x8", "a-east-1", 16.00)),
    ("accelerators: GPU-X:8", True, ("a.gpu.x8", "a-east-1", 4.80)),
    ("accelerators: GPU-Y:4", False, ("b.gpu.y4", "b-north-1", 12.00)),
    ("accelerators: GPU-Y:4", True, ("b.gpu.y4", "b-north-1", 3.00)),
    ("cpus: 2+", False, ("b.cpu.small", "b-north-1", 0.09)),
    ("cpus: 2+", True, ("b.cpu.small", "b-south-1", 0.02)),
    ("cpus: 8+", False, ("b.cpu.large", "b-north-1", 0.36)),
    ("cpus: 8+", True, ("b.cpu.large", "b-north-1", 0.10)),
]


@pytest.mark.parametrize(("resources", "spot", "expected"), EXPECTED)
def test_single_node_answers(tiny, resources, spot, expected):
    dag = dag_of(f"resources:\n  {resources}\n  use_spot: {str(spot).lower()}\nrun: x\n")
    solution = optimize(dag, tiny)
    offer = solution.tasks[0].candidate.offer
    assert (offer.instance_type, offer.zone, offer.hourly_price) == expected
    assert offer.spot is spot
    assert solution.cost == pytest.approx(expected[2])  # 1 h by default, no data


@pytest.mark.parametrize("spot", [False, True])
def test_four_gpus_of_any_type_is_gpu_y(tiny, spot):
    dag = dag_of(
        "resources:\n  accelerators: {GPU-X: 4, GPU-Y: 4}\n"
        f"  use_spot: {str(spot).lower()}\nrun: x\n"
    )
    offer = optimize(dag, tiny).tasks[0].candidate.offer
    assert (offer.instance_type, offer.hourly_price) == ("b.gpu.y4", 3.00 if spot else 12.00)


@pytest.mark.parametrize("spot", [False, True])
def test_cpu_only_with_64_gib_has_no_offer(tiny, spot):
    from skyform.errors import NoOffersError

    dag = dag_of(f"resources: {{memory: 64+, use_spot: {str(spot).lower()}}}\nrun: x\n")
    with pytest.raises(NoOffersError):
        optimize(dag, tiny)


def test_gpu_x1_within_cloud_a_takes_the_first_zone_on_demand_and_the_cheap_zone_on_spot(tiny):
    on_demand = optimize(
        dag_of("resources: {accelerators: GPU-X:1}\nrun: x\n"), tiny, clouds=["cloud-a"]
    )
    spot = optimize(
        dag_of("resources: {accelerators: GPU-X:1, use_spot: true}\nrun: x\n"),
        tiny,
        clouds=["cloud-a"],
    )
    # a-east-1 and a-east-2 both sell it at 2.00: the documented order takes the first zone
    assert on_demand.tasks[0].candidate.offer.zone == "a-east-1"
    assert on_demand.cost == pytest.approx(2.00)
    assert spot.tasks[0].candidate.offer.zone == "a-east-2"
    assert spot.cost == pytest.approx(0.60)


def _worked_example(tiny, spot: bool, objective: str = "cost"):
    text = (
        f"resources: {{accelerators: GPU-X:1, use_spot: {str(spot).lower()}}}\n"
        "inputs: {'s3://bucket/data': 100}\n"
        "skyform: {estimated_hours: 10}\n"
        "run: x\n"
    )
    dag = with_inputs_at(dag_of(text), 0, "cloud-a/a-east")
    return optimize(dag, tiny, objective=objective)


def test_worked_example_on_demand_stays_near_the_data(tiny):
    solution = _worked_example(tiny, spot=False)
    task = solution.tasks[0]
    assert (task.candidate.offer.region, task.candidate.offer.spot) == ("a-east", False)
    assert solution.cost == pytest.approx(20.00)
    assert solution.egress_cost == 0.0
    # b-south would be 1.80 × 10 + 100 GB × 0.10 = 28.00: listed, but not chosen
    rows = {(c.offer.cloud, c.offer.zone): c for c in task.considered}
    assert set(rows) == {("cloud-a", "a-east-1"), ("cloud-b", "b-south-1")}
    assert next(iter(rows)) == ("cloud-a", "a-east-1")  # best first
    assert rows[("cloud-b", "b-south-1")].cost == pytest.approx(18.00)  # compute part


def test_worked_example_on_spot_takes_a_east_2(tiny):
    solution = _worked_example(tiny, spot=True)
    assert solution.tasks[0].candidate.offer.zone == "a-east-2"
    assert solution.cost == pytest.approx(6.00)


def test_worked_example_egress_flows_when_the_data_must_move(tiny):
    dag = dag_of(
        "resources: {accelerators: GPU-Y:4}\ninputs: {'s3://bucket/data': 100}\n"
        "skyform: {estimated_hours: 10}\nrun: x\n"
    )
    solution = optimize(with_inputs_at(dag, 0, "cloud-a/a-east"), tiny)
    (flow,) = solution.flows
    assert (flow.src_task, flow.dst_task, flow.gigabytes) == (None, 0, 100.0)
    assert flow.cost == pytest.approx(10.00)  # cloud-a internet rate 0.10/GB
    assert flow.seconds == pytest.approx(80.0)  # 100 GB at 10 Gbps
    assert solution.cost == pytest.approx(12.00 * 10 + 10.00)
    task = solution.tasks[0]
    assert task.start == 0.0
    assert task.finish == pytest.approx(10 + 80 / 3600)  # pulls its inputs, then runs
