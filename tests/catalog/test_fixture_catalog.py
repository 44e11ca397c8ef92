"""The fixture README's expected-answers table and egress worked example, through `query`."""

from __future__ import annotations

import pytest

from skyform.plan.catalog import Location


def _best(offers):
    assert offers, "expected an offer"
    best = offers[0]
    return best.instance_type, best.zone, best.hourly_price


@pytest.mark.parametrize(
    ("filters", "on_demand", "spot"),
    [
        (
            {"accelerator": "GPU-X", "min_accelerator_count": 1},
            ("b.gpu.x1", "b-south-1", 1.80),
            ("b.gpu.x1", "b-north-1", 0.50),
        ),
        (
            {"accelerator": "GPU-X", "min_accelerator_count": 8},
            ("a.gpu.x8", "a-east-1", 16.00),
            ("a.gpu.x8", "a-east-1", 4.80),
        ),
        (
            {"min_accelerator_count": 4},
            ("b.gpu.y4", "b-north-1", 12.00),
            ("b.gpu.y4", "b-north-1", 3.00),
        ),
        (
            {"accelerator_count": 0, "cpus": 2},
            ("b.cpu.small", "b-north-1", 0.09),
            ("b.cpu.small", "b-south-1", 0.02),
        ),
        (
            {"accelerator_count": 0, "cpus": 8},
            ("b.cpu.large", "b-north-1", 0.36),
            ("b.cpu.large", "b-north-1", 0.10),
        ),
    ],
)
def test_expected_answers(tiny, filters, on_demand, spot):
    assert _best(tiny.query(**filters, spot=False)) == on_demand
    assert _best(tiny.query(**filters, spot=True)) == spot


def test_no_cpu_only_offer_with_64_gib(tiny):
    assert tiny.query(accelerator_count=0, memory=64) == []
    assert tiny.query(memory=64)  # GPU machines do have it


def test_a_gpu_x1_within_cloud_a(tiny):
    on_demand = tiny.query(cloud="cloud-a", instance_type="a.gpu.x1", spot=False)
    cheapest = [o for o in on_demand if o.hourly_price == on_demand[0].hourly_price]
    assert {(o.region, o.hourly_price) for o in cheapest} == {("a-east", 2.00)}
    assert {o.zone for o in cheapest} == {"a-east-1", "a-east-2"}  # either zone
    spot = tiny.query(cloud="cloud-a", instance_type="a.gpu.x1", spot=True)
    assert _best(spot) == ("a.gpu.x1", "a-east-2", 0.60)
    assert "a-west" not in {o.region for o in spot}  # no spot price in a-west


def test_spot_gaps_are_not_offers(tiny):
    assert not tiny.query(instance_type="b.cpu.large", region="b-south", spot=True)
    assert tiny.query(instance_type="b.cpu.large", region="b-south", spot=False)


def test_exact_cpu_match_and_defaults(tiny):
    class Range:
        def __init__(self, value, at_least):
            self.value, self.at_least = value, at_least

    exact = tiny.query(cpus=Range(8, False), accelerator_count=0)
    assert {o.vcpus for o in exact} == {8}
    at_least = tiny.query(cpus=Range(8, True))
    assert {o.vcpus for o in at_least} == {8, 48, 96}
    assert tiny.default_clouds == ("cloud-a", "cloud-b")
    assert tiny.query(cloud="aws") == []


def test_egress_worked_example(tiny):
    store = Location("cloud-a", "a-east", "a-east-1")
    gb = 100

    def total(offer, hours=10):
        return offer.hourly_price * hours + tiny.egress.cost(store, offer.location, gb)

    od = {o.zone: o for o in tiny.query(accelerator="GPU-X", accelerator_count=1, spot=False)}
    assert total(od["a-east-1"]) == pytest.approx(20.00)
    assert total(od["b-south-1"]) == pytest.approx(28.00)
    assert min(od.values(), key=total).region == "a-east"
    spot = {o.zone: o for o in tiny.query(accelerator="GPU-X", accelerator_count=1, spot=True)}
    assert total(spot["a-east-2"]) == pytest.approx(6.00)
    assert total(spot["b-north-1"]) == pytest.approx(15.00)
    assert min(spot.values(), key=total).zone == "a-east-2"


def test_fixture_egress_rules(tiny):
    e = tiny.egress
    a_east, a_west = Location("cloud-a", "a-east", "a-east-1"), Location("cloud-a", "a-west")
    b_north = Location("cloud-b", "b-north", "b-north-1")
    assert e.cost(a_east, a_west, 10) == pytest.approx(0.20)
    assert e.cost(b_north, Location("cloud-b", "b-south"), 10) == pytest.approx(0.10)
    assert e.cost(b_north, a_east, 10) == pytest.approx(0.50)  # source cloud's internet rate
    assert e.cost(a_east, Location("cloud-a", "a-east", "a-east-2"), 10) == 0.0
    assert e.seconds(a_east, a_east, 10) == 0.0
    assert e.seconds(a_east, b_north, 10) == pytest.approx(8.0)  # 10 GB at 10 Gbps
