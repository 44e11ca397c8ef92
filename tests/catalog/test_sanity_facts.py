"""The bundled catalog reproduces every "Sanity-check facts" line of shared/catalog/README.md,
plus its row counts, through the public query API."""

from __future__ import annotations

import csv
import io
from collections import Counter

import pytest

from tests.catalog.conftest import bundled_text


def _rows(name: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(bundled_text(name))))


def _prices(offers) -> set[float]:
    return {round(o.hourly_price, 6) for o in offers}


def test_row_counts_per_file_and_region():
    aws, gcp = _rows("aws_vms.csv"), _rows("gcp_vms.csv")
    assert len(aws) == 1152
    assert len(gcp) == 6889
    assert Counter(r["Region"] for r in aws) == {
        "us-east-1": 300,
        "us-east-2": 181,
        "us-west-2": 256,
        "eu-west-1": 97,
        "eu-central-1": 159,
        "ap-northeast-1": 159,
    }
    assert Counter(r["Region"] for r in gcp) == {
        "us-central1": 1649,
        "us-east1": 1219,
        "us-west1": 1019,
        "europe-west4": 1383,
        "asia-east1": 829,
        "asia-northeast1": 790,
    }
    kinds = Counter(
        "vm" if r["InstanceType"] else "tpu" if r["AcceleratorName"].startswith("tpu-") else "gpu"
        for r in gcp
    )
    assert kinds == {"vm": 6017, "gpu": 320, "tpu": 552}


def test_aws_offer_count_is_one_per_price_cell(bundled):
    aws = _rows("aws_vms.csv")
    expected = sum(bool(r["Price"]) for r in aws) + sum(bool(r["SpotPrice"]) for r in aws)
    assert expected == 1152 * 2 - 4 - 22  # 4 empty Price, 22 empty SpotPrice (README quirks)
    assert len(bundled.query(cloud="aws")) == expected


def test_p4d_us_east_1(bundled):
    offers = bundled.query(cloud="aws", region="us-east-1", instance_type="p4d.24xlarge")
    on_demand = [o for o in offers if not o.spot]
    assert {o.zone for o in on_demand} == {"use1-az1", "use1-az2", "use1-az4", "use1-az6"}
    assert {o.hourly_price for o in on_demand} == {21.957642}
    spot = {o.zone: o.hourly_price for o in offers if o.spot}
    assert spot == {"use1-az1": 2.4655, "use1-az6": 7.8799, "use1-az4": 8.1203, "use1-az2": 8.1915}
    first = on_demand[0]
    assert (first.accelerator, first.accelerator_count) == ("A100", 8.0)
    assert (first.vcpus, first.memory_gib, first.gpu_memory_gib) == (96.0, 1152.0, 40.0)
    assert on_demand[0].hourly_price / 8 == pytest.approx(2.745, abs=5e-4)


def test_gcp_a2_highgpu_8g_us_central1_is_vm_plus_gpu_row(bundled):
    offers = bundled.query(cloud="gcp", region="us-central1", instance_type="a2-highgpu-8g")
    assert {o.zone for o in offers} == {f"us-central1-{z}" for z in "abcf"}
    assert _prices(o for o in offers if not o.spot) == {29.38708}
    assert _prices(o for o in offers if o.spot) == {14.4308}
    first = offers[0]
    assert (first.accelerator, first.accelerator_count) == ("A100", 8.0)
    assert (first.vcpus, first.memory_gib) == (96.0, 680.0)


def test_cheapest_a100_instance_on_demand(bundled):
    best = bundled.query(accelerator="A100", spot=False)[0]
    assert (best.cloud, best.instance_type, best.zone) == ("gcp", "a2-highgpu-1g", "europe-west4-a")
    assert best.hourly_price == pytest.approx(0.81406 + 1.61365)
    assert best.hourly_price == pytest.approx(2.42771)
    assert best.accelerator_count == 1


def test_cheapest_a100_per_gpu_hour(bundled):
    def per_gpu(o):
        return (o.hourly_price / o.accelerator_count, o.sort_key)

    on_demand = min(bundled.query(accelerator="A100", spot=False), key=per_gpu)
    assert (on_demand.instance_type, on_demand.zone) == ("a2-megagpu-16g", "europe-west4-a")
    assert on_demand.hourly_price == pytest.approx(35.50241)
    assert on_demand.hourly_price / 16 == pytest.approx(2.219, abs=5e-4)
    spot = min(bundled.query(accelerator="A100", spot=True), key=per_gpu)
    assert (spot.cloud, spot.instance_type, spot.zone) == ("aws", "p4d.24xlarge", "use1-az1")
    assert spot.hourly_price == pytest.approx(2.4655)
    assert spot.hourly_price / 8 == pytest.approx(0.308, abs=5e-4)


@pytest.mark.parametrize(
    ("cloud", "region", "instance_type", "price"),
    [
        ("aws", "us-east-1", "p5.48xlarge", 55.04),
        ("gcp", "us-central1", "a3-highgpu-8g", 9.46006 + 33.60609),
        ("gcp", "us-central1", "a3-highgpu-8g", 43.06615),
        ("aws", "us-east-1", "g5.xlarge", 1.006),
        ("aws", "us-east-1", "g6.xlarge", 0.8048),
        ("aws", "us-east-1", "g6e.xlarge", 1.861),
        ("aws", "us-east-1", "g4dn.xlarge", 0.526),
        ("aws", "us-east-1", "m7a.large", 0.11592),
        ("aws", "us-east-1", "m7g.large", 0.0816),
    ],
)
def test_reference_on_demand_prices(bundled, cloud, region, instance_type, price):
    offers = bundled.query(cloud=cloud, region=region, instance_type=instance_type, spot=False)
    assert offers, f"no {instance_type} in {region}"
    assert _prices(offers) == {round(price, 6)}


def test_every_aws_and_gcp_offer_has_a_zone_and_a_positive_price(bundled):
    offers = bundled.query()
    assert offers
    assert all(o.zone for o in offers)
    assert all(o.hourly_price > 0 for o in offers)


def test_results_follow_the_total_order(bundled):
    offers = bundled.query(accelerator="H100")
    assert offers == sorted(offers)
    assert [o.sort_key for o in offers] == sorted(o.sort_key for o in offers)
    assert len({o.id for o in bundled.query()}) == len(bundled.query())  # ids are unique
