"""Offers that do not come from the price tables: local, ssh pools, Kubernetes pricing
(Kubernetes capacity: test_kubernetes_capacity.py)."""

from __future__ import annotations

import os

import pytest

from skyform.config import Config, HostLabels, LocalNode, SSHHost, SSHPool
from skyform.errors import ConfigError
from skyform.plan.catalog import load_catalog


def _pools(**pools: list[SSHHost]) -> Config:
    return Config(ssh_pools={name: SSHPool(hosts=hosts) for name, hosts in pools.items()})


def test_local_offer_from_config():
    cat = load_catalog(Config(local=LocalNode(cpus=6, memory=24, accelerators={"t4": 1})))
    (offer,) = cat.query(cloud="local")
    assert (offer.region, offer.zone, offer.instance_type) == ("local", "local", "local")
    assert (offer.vcpus, offer.memory_gib, offer.hourly_price) == (6, 24, 0.0)
    assert (offer.accelerator, offer.accelerator_count) == ("T4", 1.0)  # canonical name
    assert offer.capacity is None and not offer.spot
    assert offer.id == "local/local/local/local/ondemand"
    assert "local" not in {o.cloud for o in cat.query()}  # only when named


def test_local_offer_detects_the_machine_without_config():
    (offer,) = load_catalog(Config()).query(cloud="local", accelerator_count=0)
    assert offer.vcpus == os.cpu_count()
    assert offer.memory_gib and offer.memory_gib > 0
    assert offer.hourly_price == 0.0


def test_ssh_hosts_with_identical_specs_group_into_one_offer_with_capacity():
    gpu = {"cpus": 16, "memory": 64, "accelerators": {"A100": 2}}
    cfg = _pools(
        lab=[
            SSHHost(host="10.0.0.1", **gpu),
            SSHHost(host="10.0.0.2", **gpu),
            SSHHost(host="10.0.0.3", **gpu, labels=HostLabels(region="west", spot=True)),
            SSHHost(host="10.0.0.4", cpus=4, memory=16, hourly_price=0.2),
        ]
    )
    offers = load_catalog(cfg).query(cloud="ssh")
    by_id = {o.id: o for o in offers}
    assert set(by_id) == {
        "ssh/lab/lab/lab/16CPU--64GB--2xA100/ondemand",
        "ssh/lab/west/west/16CPU--64GB--2xA100/spot",
        "ssh/lab/lab/lab/4CPU--16GB/ondemand",
    }
    assert by_id["ssh/lab/lab/lab/16CPU--64GB--2xA100/ondemand"].capacity == 2
    assert by_id["ssh/lab/west/west/16CPU--64GB--2xA100/spot"].capacity == 1
    assert by_id["ssh/lab/lab/lab/4CPU--16GB/ondemand"].hourly_price == 0.2
    assert {o.context for o in offers} == {"lab"}
    assert load_catalog(cfg).query(cloud="ssh", accelerator="a100", accelerator_count=2)


def test_ssh_hosts_without_cpus_match_only_unconstrained_requests():
    cat = load_catalog(_pools(rack=[SSHHost(host="h1"), SSHHost(host="h2")]))
    (offer,) = cat.query(cloud="ssh")
    assert (offer.vcpus, offer.memory_gib, offer.capacity) == (None, None, 2)
    assert offer.instance_type == "anyCPU--anyGB"
    assert cat.query(cloud="ssh", cpus=1) == []
    hint = cat.no_offers_hint(clouds=["ssh"], cpus=1)
    assert hint and "rack" in hint and "cpus:" in hint
    assert cat.no_offers_hint(clouds=["ssh"]) is None


def test_a_host_with_two_accelerator_types_is_a_config_error():
    cfg = _pools(lab=[SSHHost(host="h1", accelerators={"A100": 1, "T4": 1})])
    with pytest.raises(ConfigError, match=r"ssh_pools.lab.hosts\[0\].accelerators"):
        load_catalog(cfg)


def test_kubernetes_pricing_rows_most_specific_wins():
    from skyform.plan.catalog.kubernetes import KubernetesPricing, PricingRow

    pricing = KubernetesPricing(
        [
            PricingRow("", "", 0.01, 0.001, "", 0.0),
            PricingRow("prod", "", 0.02, 0.002, "", 0.0),
            PricingRow("", "", 0.0, 0.0, "H100", 2.0),
            PricingRow("prod", "", 0.05, 0.0, "H100", 3.0),
        ]
    )
    assert pricing.price("dev", None, 4, 16, None, 0) == pytest.approx(0.056)
    assert pricing.price("prod", None, 4, 16, None, 0) == pytest.approx(0.112)
    assert pricing.price("dev", None, 4, 16, "H100", 2) == pytest.approx(4.0)
    assert pricing.price("prod", None, 4, 16, "H100", 2) == pytest.approx(6.2)
