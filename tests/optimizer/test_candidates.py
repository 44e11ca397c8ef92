"""What a request admits: ordered vs any_of, max_hourly_cost, spot, capacity, defaults, clouds,
blocked placements, estimated hours, data edges."""

from __future__ import annotations

import random

import pytest
from optimizer_helpers import dag_of, with_inputs_at

from skyform.config import Config
from skyform.errors import NoOffersError
from skyform.plan.catalog import BUNDLED_DIR, load_catalog
from skyform.plan.model import BlockedPlacement
from skyform.plan.optimizer import brute_force, optimize, problem_for


def chosen(solution, index: int = 0):
    return solution.tasks[index].candidate


def test_a_set_of_accelerators_takes_the_cheapest(tiny):
    solution = optimize(dag_of("resources: {accelerators: {GPU-Y: 4, GPU-X: 1}}\nrun: x\n"), tiny)
    assert chosen(solution).offer.instance_type == "b.gpu.x1"  # 1.80 beats 12.00


def test_an_ordered_list_takes_the_first_that_exists_even_if_dearer(tiny):
    solution = optimize(dag_of("resources: {accelerators: [GPU-Y:4, GPU-X:1]}\nrun: x\n"), tiny)
    assert chosen(solution).offer.instance_type == "b.gpu.y4"
    assert chosen(solution).group == 0
    # the "considered" rows only come from the chosen group
    assert {c.offer.accelerator for c in solution.tasks[0].considered} == {"GPU-Y"}


def test_an_ordered_list_falls_through_groups_with_no_offer(tiny):
    text = (
        "resources:\n  ordered:\n    - {accelerators: GPU-X:2}\n"
        "    - {accelerators: GPU-Y:4}\nrun: x\n"
    )
    solution = optimize(dag_of(text), tiny)
    assert chosen(solution).offer.instance_type == "b.gpu.y4"
    assert chosen(solution).group == 1


def test_any_of_picks_the_best_across_entries(tiny):
    text = (
        "resources:\n  any_of:\n    - {accelerators: GPU-Y:4, use_spot: true}\n"
        "    - {accelerators: GPU-X:8}\nrun: x\n"
    )
    solution = optimize(dag_of(text), tiny)
    assert (chosen(solution).offer.instance_type, chosen(solution).offer.spot) == ("b.gpu.y4", True)
    assert chosen(solution).request == 0


def test_max_hourly_cost_counts_every_node(tiny):
    text = "num_nodes: 2\nresources: {{accelerators: GPU-X:1, max_hourly_cost: {}}}\nrun: x\n"
    solution = optimize(dag_of(text.format(3.6)), tiny)  # 2 × 1.80 = 3.60: inclusive
    assert chosen(solution).offer.zone == "b-south-1"
    assert chosen(solution).hourly_cost == pytest.approx(3.6)
    assert solution.cost == pytest.approx(3.6)
    with pytest.raises(NoOffersError):
        optimize(dag_of(text.format(3.5)), tiny)


def test_spot_and_on_demand_never_mix(tiny):
    on_demand = optimize(dag_of("resources: {cpus: 2+}\nrun: x\n"), tiny)
    spot = optimize(dag_of("resources: {cpus: 2+, use_spot: true}\nrun: x\n"), tiny)
    assert not any(c.offer.spot for c in on_demand.tasks[0].considered)
    assert all(c.offer.spot for c in spot.tasks[0].considered)


def test_no_resources_means_8_vcpus_and_4_gib_per_vcpu(tiny, bundled):
    fixture = optimize(dag_of("run: x\n"), tiny)
    assert chosen(fixture).offer.instance_type == "b.cpu.large"  # 8 vCPU / 32 GiB, 0.36
    real = optimize(dag_of("run: x\n"), bundled)
    for cand in real.tasks[0].considered:
        offer = cand.offer
        assert offer.vcpus >= 8 and offer.memory_gib >= 4 * offer.vcpus
        assert offer.accelerator is None


def test_a_cpu_request_gets_no_gpu_machines(bundled):
    solution = optimize(dag_of("resources: {cpus: 4+}\nrun: x\n"), bundled)
    assert all(c.offer.accelerator is None for c in solution.tasks[0].considered)
    assert chosen(solution).offer.vcpus >= 4


@pytest.fixture(scope="module")
def with_pools():
    config = Config.model_validate(
        {
            "ssh_pools": {
                "lab": {
                    "hosts": [
                        {"host": "10.0.0.1", "cpus": 4, "memory": 16},
                        {"host": "10.0.0.2", "cpus": 4, "memory": 16},
                    ]
                }
            }
        }
    )
    return load_catalog(config, source=BUNDLED_DIR)


def test_free_infra_is_never_used_unless_named(with_pools):
    solution = optimize(dag_of("resources: {cpus: 2+}\nrun: x\n"), with_pools)
    assert chosen(solution).offer.cloud in ("aws", "gcp")
    named = optimize(dag_of("resources: {cpus: 2+, infra: ssh/lab}\nrun: x\n"), with_pools)
    assert (chosen(named).offer.cloud, chosen(named).offer.hourly_price) == ("ssh", 0.0)


def test_ssh_pools_with_too_few_hosts_are_out(with_pools):
    ok = optimize(dag_of("num_nodes: 2\nresources: {infra: ssh/lab}\nrun: x\n"), with_pools)
    assert chosen(ok).offer.capacity == 2  # and no 8-vCPU default filter on ssh
    with pytest.raises(NoOffersError) as caught:
        optimize(dag_of("num_nodes: 3\nresources: {infra: ssh/lab}\nrun: x\n"), with_pools)
    assert "num_nodes: 2" in caught.value.hint


def test_local_and_kubernetes_get_no_default_size(bundled, kubeconfig):
    local = optimize(dag_of("resources: {infra: local}\nrun: x\n"), bundled)
    assert chosen(local).offer.cloud == "local"
    kubeconfig({"lab": "gfd"}, current="lab")
    catalog = load_catalog(Config())
    k8s = optimize(dag_of("resources: {infra: k8s}\nrun: x\n"), catalog)
    assert chosen(k8s).offer.instance_type == "2CPU--2GB"  # Kubernetes' own pod default


def test_blocked_placements_are_skipped(tiny):
    dag = dag_of("resources: {accelerators: GPU-X:1}\nrun: x\n")
    block = BlockedPlacement(cloud="cloud-b", zone="b-south-1", spot=False, reason="preempted")
    solution = optimize(dag, tiny, blocked=[block])
    assert chosen(solution).offer.zone == "a-east-1"  # next best: 2.00 in the first zone
    everything = [BlockedPlacement(cloud="cloud-a"), BlockedPlacement(cloud="cloud-b")]
    with pytest.raises(NoOffersError) as caught:
        optimize(dag, tiny, blocked=everything)
    assert "if unblocked" in caught.value.hint


def _random_blocks(rng: random.Random, offers) -> list[BlockedPlacement]:
    blocks = []
    for _ in range(rng.randint(1, 4)):
        offer = rng.choice(offers)
        fields = rng.sample(["cloud", "region", "zone", "instance_type", "spot"], rng.randint(1, 3))
        blocks.append(BlockedPlacement(**{f: getattr(offer, f) for f in fields}))
    return blocks


def test_blocked_placements_are_never_chosen_and_the_rest_stays_optimal(tiny):
    text = (
        "name: p\n---\nname: a\nresources: {accelerators: {GPU-X: 1, GPU-Y: 4}}\n"
        "outputs: {'s3://x/a': 20}\nrun: x\n---\nname: b\nresources: {cpus: 2+}\nrun: x\n"
    )
    dag = dag_of(text)
    offers = tiny.all_offers()
    rng = random.Random(7)
    for _ in range(60):
        blocks = _random_blocks(rng, offers)
        try:
            solution = optimize(dag, tiny, blocked=blocks)
        except NoOffersError:
            continue
        for task in solution.tasks:
            assert not any(b.matches(task.candidate.offer) for b in blocks), blocks
        expected = brute_force(problem_for(dag, tiny, blocked=blocks))
        assert solution.cost == pytest.approx(expected.cost)
        assert solution.choice == expected.choice


def test_estimated_hours_per_accelerator_drive_cost_and_time(tiny):
    text = (
        "resources: {accelerators: {GPU-X: 1, GPU-Y: 4}}\n"
        "skyform: {estimated_hours: {GPU-X: 10, GPU-Y: 2}}\nrun: x\n"
    )
    cheap = optimize(dag_of(text), tiny)
    assert chosen(cheap).offer.accelerator == "GPU-X"  # 1.80 × 10 = 18 < 12 × 2 = 24
    assert (chosen(cheap).hours, cheap.cost) == (10.0, pytest.approx(18.0))
    fast = optimize(dag_of(text), tiny, objective="time")
    assert chosen(fast).offer.accelerator == "GPU-Y"
    assert fast.makespan == pytest.approx(2.0)


def test_estimated_hours_default_and_plain_number(tiny):
    mapped = "resources: {cpus: 2+}\nskyform: {estimated_hours: {GPU-X: 10, default: 3}}\nrun: x\n"
    assert chosen(optimize(dag_of(mapped), tiny)).hours == 3.0
    plain = "resources: {cpus: 2+}\nskyform: {estimated_hours: 4.5}\nrun: x\n"
    assert chosen(optimize(dag_of(plain), tiny)).hours == 4.5
    assert chosen(optimize(dag_of("resources: {cpus: 2+}\nrun: x\n"), tiny)).hours == 1.0


def test_num_nodes_multiplies_the_hourly_cost(tiny):
    solution = optimize(dag_of("num_nodes: 3\nresources: {cpus: 2+}\nrun: x\n"), tiny)
    cand = chosen(solution)
    assert cand.num_nodes == 3
    assert cand.hourly_cost == pytest.approx(3 * 0.09)
    assert solution.cost == pytest.approx(3 * 0.09)


PIPELINE = """\
name: p
---
name: make
resources: {cpus: 2+}
inputs: {'s3://raw/x': 30}
outputs: {'s3://mid/y': 40}
run: x
---
name: use
resources: {cpus: 2+}
inputs: {'s3://mid/y': 40}
run: x
"""


def test_edges_carry_the_parents_outputs_and_inputs_are_anchors(tiny):
    dag = with_inputs_at(with_inputs_at(dag_of(PIPELINE), 0, "cloud-a/a-east"), 1, "cloud-a")
    problem = problem_for(dag, tiny)
    assert [(e.src, e.dst, e.gigabytes) for e in problem.edges] == [(0, 1, 40.0)]
    # `use` reads what `make` wrote: that travels over the edge, not again from the bucket
    assert [(a.task, a.gigabytes, a.label) for a in problem.anchors] == [(0, 30.0, "s3://raw/x")]
