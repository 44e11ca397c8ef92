"""Egress prices on the bundled (approximate) table: tiers, inter-region, cross-cloud, fallbacks."""

from __future__ import annotations

import pytest

from skyform.plan.catalog import Location
from skyform.plan.catalog.egress import EgressRow, EgressTable

USE1 = Location("aws", "us-east-1", "use1-az1")


def test_same_zone_is_free_and_instant(bundled):
    assert bundled.egress.transfer(USE1, USE1, 500) == (0.0, 0.0)


def test_same_region_other_zone(bundled):
    other = Location("aws", "us-east-1", "use1-az2")
    assert bundled.egress.cost(USE1, other, 100) == pytest.approx(1.0)
    assert bundled.egress.seconds(USE1, other, 100) == pytest.approx(80.0)


def test_inter_region_rows(bundled):
    assert bundled.egress.cost(USE1, Location("aws", "us-east-2"), 100) == pytest.approx(1.0)
    assert bundled.egress.cost(USE1, Location("aws", "eu-west-1"), 100) == pytest.approx(2.0)
    tokyo = Location("aws", "ap-northeast-1")
    assert bundled.egress.cost(tokyo, USE1, 100) == pytest.approx(9.0)
    iowa = Location("gcp", "us-central1", "us-central1-a")
    assert bundled.egress.cost(iowa, Location("gcp", "europe-west4"), 100) == pytest.approx(5.0)


def test_cross_cloud_uses_the_source_internet_tiers_from_zero(bundled):
    gcp = Location("gcp", "us-central1", "us-central1-a")
    assert bundled.egress.cost(USE1, gcp, 100) == pytest.approx(9.0)
    assert bundled.egress.cost(gcp, USE1, 100) == pytest.approx(12.0)
    # 20 TiB from us-east-1: 10240 GB at 0.09 + 10240 GB at 0.085
    assert bundled.egress.cost(USE1, gcp, 20480) == pytest.approx(10240 * 0.09 + 10240 * 0.085)
    # GCP: 1 TiB at 0.12, 9 TiB at 0.11, then 0.08
    expected = 1024 * 0.12 + 9216 * 0.11 + 1000 * 0.08
    assert bundled.egress.cost(gcp, USE1, 11240) == pytest.approx(expected)


def test_onprem_is_free_unless_configured(bundled):
    local = Location("local", "local", "local")
    ssh = Location("ssh", "lab", "lab")
    assert bundled.egress.cost(local, USE1, 100) == 0.0
    assert bundled.egress.cost(ssh, local, 100) == 0.0
    assert bundled.egress.seconds(ssh, local, 100) == pytest.approx(80.0)
    assert bundled.egress.cost(USE1, local, 100) == pytest.approx(9.0)  # leaving AWS still costs


def test_unknown_pairs_fall_back_to_the_highest_internet_rate():
    table = EgressTable(
        [
            EgressRow("x", "r1", "internet", 0, None, 0.10),
            EgressRow("x", "r2", "internet", 0, None, 0.30),
        ]
    )
    r1 = Location("x", "r1", "r1-a")
    assert table.cost(r1, Location("x", "r9"), 10) == pytest.approx(3.0)  # no r1->r9 row
    assert table.cost(Location("x", "r9"), Location("y"), 10) == pytest.approx(3.0)  # unknown src
    assert table.cost(r1, Location("x", "r1", "r1-b"), 10) == 0.0  # no cross-zone row: free
    assert table.cost(r1, Location("y", "r1"), 10) == pytest.approx(1.0)
