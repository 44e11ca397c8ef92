"""When nothing fits: exit code 4, where, what was asked, and the nearest feasible offers."""

from __future__ import annotations

import pytest
from optimizer_helpers import dag_of

from skyform.errors import NoOffersError
from skyform.plan.optimizer import optimize


def failure(text: str, catalog, **kw) -> NoOffersError:
    with pytest.raises(NoOffersError) as caught:
        optimize(dag_of(text, path="jobs/train.yaml"), catalog, **kw)
    return caught.value


def test_names_the_task_its_file_and_line_and_what_was_asked(tiny):
    error = failure(
        "name: train\nrun: x\nresources:\n  accelerators: GPU-X:3\n  use_spot: true\n", tiny
    )
    assert error.exit_code == 4
    assert error.message.startswith(
        "jobs/train.yaml:3: task 'train': no offer matches GPU-X:3, spot"
    )


def test_an_unnamed_task_is_named_after_its_file_as_skypilot_names_it(tiny):
    error = failure("run: x\nresources:\n  accelerators: GPU-X:3\n", tiny)
    assert error.message.startswith("jobs/train.yaml:2: task 'train': no offer matches GPU-X:3")


def test_an_unnamed_task_read_from_stdin_is_numbered(tiny):
    with pytest.raises(NoOffersError) as caught:
        optimize(dag_of("run: x\nresources: {accelerators: GPU-X:3}\n", path="<task>"), tiny)
    assert caught.value.message.startswith("<task>:2: task #1: no offer matches GPU-X:3")


def test_an_unsold_count_lists_the_counts_that_are_sold(tiny):
    error = failure("resources: {accelerators: GPU-X:3, use_spot: true}\nrun: x\n", tiny)
    assert "GPU-X:3 is not sold on cloud-a, cloud-b (counts sold: 1, 8)" in error.hint
    assert "GPU-X:8 cloud-a a.gpu.x8 (a-east-1) spot $4.80/h" in error.hint
    assert "GPU-X:1 cloud-b b.gpu.x1 (b-north-1) spot $0.50/h" in error.hint
    # nearest count above first: a job that needs 3 GPUs runs on 8, not on 1
    assert error.hint.index("GPU-X:8") < error.hint.index("GPU-X:1")


def test_a_price_cap_suggests_dropping_it_with_the_price(tiny):
    error = failure("resources: {accelerators: GPU-Y:4, max_hourly_cost: 5}\nrun: x\n", tiny)
    assert "without max_hourly_cost: GPU-Y:4 cloud-b b.gpu.y4 (b-north-1) $12.00/h" in error.hint
    assert "spot: GPU-Y:4 cloud-b b.gpu.y4 (b-north-1) spot $3.00/h" in error.hint


def test_too_much_memory_suggests_the_largest_machine(tiny):
    error = failure("resources: {memory: 64+}\nrun: x\n", tiny)
    assert "largest available (8 vCPUs, 32 GiB): cloud-b b.cpu.large (b-north-1) $0.36/h" in (
        error.hint
    )


def test_a_region_without_the_gpu_suggests_other_regions_and_clouds(bundled):
    error = failure("resources: {infra: aws/eu-west-1, accelerators: H100:8}\nrun: x\n", bundled)
    assert "no offer matches H100:8, aws/eu-west-1" in error.message
    assert "in another region: H100:8 aws p5.48xlarge" in error.hint
    assert "on another cloud: H100:8 gcp" in error.hint


def test_an_on_demand_request_for_a_spot_only_machine_suggests_spot(bundled):
    error = failure("resources: {instance_type: p5e.48xlarge}\nrun: x\n", bundled)
    assert "spot: H200:8 aws p5e.48xlarge" in error.hint
    assert "another instance type: H200:8 gcp" in error.hint


def test_an_accelerator_only_other_clouds_sell_says_so(bundled):
    error = failure("resources: {accelerators: A10:1}\nrun: x\n", bundled)
    assert "A10 is not sold on aws, gcp. SkyPilot lists it on Azure" in error.hint


def test_an_unknown_accelerator_says_so(bundled):
    error = failure("resources: {accelerators: A100X:1}\nrun: x\n", bundled)
    assert "The catalog has no accelerator 'A100X'" in error.hint
    assert "Did you mean" in error.hint


def test_the_nearest_alternatives_are_also_structured(tiny):
    error = failure("resources: {accelerators: GPU-X:3}\nrun: x\n", tiny)
    assert [n.offer.accelerator_count for n in error.nearest] == [8.0, 1.0]
    assert error.nearest[0].hourly_cost == pytest.approx(16.0)
