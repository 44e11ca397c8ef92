"""Each "Known quirks" item of the catalog README, and the GCP pairing rules."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from skyform.config import Config
from skyform.errors import CatalogError
from skyform.plan.catalog import load_catalog
from skyform.plan.catalog.accelerators import N1_ATTACH_CAPS
from tests.catalog.conftest import bundled_text


def test_empty_price_means_no_on_demand_offer(bundled):
    p5e = bundled.query(cloud="aws", instance_type="p5e.48xlarge")
    assert p5e, "p5e.48xlarge still has spot offers"
    assert all(o.spot for o in p5e)
    assert len(p5e) == 3  # 4 rows, one of which has no SpotPrice either


def test_empty_spot_price_means_no_spot_offer(bundled):
    p5_4x = bundled.query(cloud="aws", instance_type="p5.4xlarge")
    us = [o for o in p5_4x if o.region.startswith("us-")]
    assert us and not any(o.spot for o in us)
    tpu = bundled.query(cloud="gcp", zone="us-east1-d", accelerator="tpu-v3-8")
    assert [o.spot for o in tpu] == [False]


def test_spot_above_on_demand_is_kept_as_the_source_says(bundled):
    offers = bundled.query(cloud="aws", zone="euc1-az2", instance_type="p4d.24xlarge")
    prices = {o.spot: o.hourly_price for o in offers}
    assert prices == {False: 27.43298, True: 27.433}


def test_a4_vm_rows_priced_zero_take_the_whole_price_from_the_b200_row(bundled):
    a4 = bundled.query(cloud="gcp", instance_type="a4-highgpu-8g")
    assert a4
    gpu_rows = {
        (r["AvailabilityZone"], r["SpotPrice"] != "" and False): float(r["Price"])
        for r in csv.DictReader(io.StringIO(bundled_text("gcp_vms.csv")))
        if r["AcceleratorName"] == "B200"
    }
    for offer in a4:
        assert offer.accelerator == "B200" and offer.accelerator_count == 8
        if not offer.spot:
            assert offer.hourly_price == gpu_rows[(offer.zone, False)]
    assert all(o.hourly_price > 0 for o in bundled.query(cloud="gcp"))


def test_fractional_gpu_matches_only_its_exact_fraction(bundled):
    g6f = bundled.query(cloud="aws", instance_type="g6f.2xlarge")
    assert g6f and {o.accelerator_count for o in g6f} == {0.25}
    assert {o.accelerator for o in g6f} == {"L4"}
    quarter = bundled.query(accelerator="L4", accelerator_count=0.25)
    assert {o.instance_type for o in quarter} == {"g6f.2xlarge"}
    whole = bundled.query(cloud="aws", accelerator="L4", min_accelerator_count=1)
    assert "g6f.2xlarge" not in {o.instance_type for o in whole}


def test_price_precision_is_kept_per_region(bundled):
    p4d = bundled.query(cloud="aws", instance_type="p4d.24xlarge", spot=False)
    by_region = {o.region: o.hourly_price for o in p4d}
    assert by_region["us-east-1"] == 21.957642
    assert by_region["us-east-2"] == 21.95764
    assert by_region["us-west-2"] == 21.95764


def test_zones_are_az_ids_including_local_zones(bundled):
    zones = bundled.zones("aws", "us-east-1")
    assert "use1-az4" in zones and "use1-atl2-az1" in zones
    assert not any(z.startswith("us-east-1") for z in zones)
    assert {"usw2-lax1-az1", "usw2-lax1-az2"} <= set(bundled.zones("aws", "us-west-2"))
    assert bundled.regions("gcp") == [
        "asia-east1",
        "asia-northeast1",
        "europe-west4",
        "us-central1",
        "us-east1",
        "us-west1",
    ]


def test_columns_are_read_by_name_whatever_their_order(catalog_copy: Path):
    rows = list(csv.reader(io.StringIO(bundled_text("gcp_vms.csv"))))
    order = list(reversed(range(len(rows[0]))))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([[r[i] for i in order] for r in rows])
    (catalog_copy / "gcp_vms.csv").write_text(buf.getvalue())
    shuffled = load_catalog(Config(), source=catalog_copy)
    original = load_catalog(Config(), source=catalog_copy.parent / "nowhere")  # bundled fallback
    assert shuffled.query(cloud="gcp") == original.query(cloud="gcp")


def test_gcp_arm_machines(bundled):
    t2a = bundled.query(cloud="gcp", instance_type="t2a-standard-4")
    assert t2a and {o.arch for o in t2a} == {"arm64"}
    assert {o.arch for o in bundled.query(cloud="aws", instance_type="m7g.large")} == {"arm64"}


def test_tpus_are_whole_price_offers_with_unknown_host_size(bundled):
    tpus = bundled.query(accelerator="tpu-v5p-128")
    assert tpus
    assert {o.instance_type for o in tpus} == {"tpu-v5p-128"}
    assert all(o.vcpus is None and o.memory_gib is None for o in tpus)
    assert not bundled.query(accelerator="tpu-v5p-128", cpus=1)


def test_duplicate_source_rows_collapse_to_one_offer(bundled):
    offers = bundled.query(zone="europe-west4-b", accelerator="tpu-v5p-8")
    assert [(o.spot, o.hourly_price) for o in offers] == [(True, 5.39396), (False, 17.01)]


def test_fixed_gpu_host_without_gpu_row_in_its_zone_gives_no_offer(bundled):
    gpu_zones = {
        r["AvailabilityZone"]
        for r in csv.DictReader(io.StringIO(bundled_text("gcp_vms.csv")))
        if r["AcceleratorName"] == "H100-MEGA"
    }
    vm_zones = {
        r["AvailabilityZone"]
        for r in csv.DictReader(io.StringIO(bundled_text("gcp_vms.csv")))
        if r["InstanceType"] == "a3-megagpu-8g"
    }
    assert len(vm_zones - gpu_zones) == 1
    offered = {o.zone for o in bundled.query(instance_type="a3-megagpu-8g")}
    assert offered == vm_zones & gpu_zones
    assert not bundled.query(cloud="gcp", instance_type="a2-highgpu-1g", accelerator_count=0)


@pytest.mark.parametrize("gpu", sorted(N1_ATTACH_CAPS))
def test_n1_attachable_gpus_respect_gcps_caps(bundled, gpu):
    offers = bundled.query(cloud="gcp", accelerator=gpu)
    assert offers
    for offer in offers:
        assert offer.instance_type.startswith(("n1-standard-", "n1-highmem-", "n1-highcpu-"))
        max_cpus, max_mem = N1_ATTACH_CAPS[gpu][offer.accelerator_count]
        if (gpu, offer.accelerator_count, offer.zone) == ("P100", 4, "us-east1-c"):
            max_cpus, max_mem = 64, 208
        assert offer.vcpus <= max_cpus and offer.memory_gib <= max_mem, offer.id


def test_n1_gpu_offer_price_is_host_plus_gpu(bundled):
    host = bundled.query(zone="us-central1-a", instance_type="n1-standard-8", accelerator_count=0)
    with_v100 = bundled.query(
        zone="us-central1-a", instance_type="n1-standard-8", accelerator="V100", accelerator_count=1
    )
    gpu_row = next(
        r
        for r in csv.DictReader(io.StringIO(bundled_text("gcp_vms.csv")))
        if r["AcceleratorName"] == "V100"
        and float(r["AcceleratorCount"]) == 1
        and r["AvailabilityZone"] == "us-central1-a"
    )
    by_spot = {o.spot: o.hourly_price for o in host}
    for offer in with_v100:
        part = float(gpu_row["SpotPrice"] if offer.spot else gpu_row["Price"])
        assert offer.hourly_price == pytest.approx(by_spot[offer.spot] + part)
    assert len(with_v100) == 2
    assert with_v100[0].id.endswith("n1-standard-8+V100x1/spot")
    # V100 x1 is capped at 12 vCPUs: n1-standard-16 cannot carry one.
    too_big = {"zone": "us-central1-a", "instance_type": "n1-standard-16"}
    assert bundled.query(**too_big, accelerator="T4", accelerator_count=1)
    assert not bundled.query(**too_big, accelerator="V100", accelerator_count=1)


def test_malformed_refreshed_file_names_file_line_and_column(catalog_copy: Path):
    text = (catalog_copy / "aws_vms.csv").read_text().splitlines(keepends=True)
    text[5] = text[5].replace(",x86_64", ",x86_64,extra")
    (catalog_copy / "aws_vms.csv").write_text("".join(text))
    with pytest.raises(CatalogError, match=r"aws_vms.csv:6: 12 columns, the header has 11"):
        load_catalog(Config(), source=catalog_copy)


def test_unknown_gpu_machine_family_is_not_offered_as_cpu_only():
    from skyform.plan.catalog.clouds import GcpHosts, gcp_offer_rows

    vm = ("g4-standard-48", None, 0.0, 48.0, 180.0, None, 1.5, 0.6, "r", "r-a", "x86_64")
    cpu = ("n2-standard-4", None, 0.0, 4.0, 16.0, None, 0.2, 0.05, "r", "r-a", "x86_64")
    rows, skipped = gcp_offer_rows([vm, cpu], GcpHosts())
    assert {r[3] for r in rows} == {"n2-standard-4"} and skipped == 1
