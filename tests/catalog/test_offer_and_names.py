"""Offer serialization and ordering; accelerator names, suggestions, regions and images."""

from __future__ import annotations

import json

import pytest

from skyform.plan.catalog import Offer


def test_offer_round_trips_through_json(bundled):
    for offer in bundled.query(accelerator="L4")[:20] + bundled.query(cloud="local"):
        again = Offer.from_dict(json.loads(json.dumps(offer.to_dict())))
        assert again == offer and again.id == offer.id


def test_from_dict_rejects_unknown_fields(bundled):
    data = bundled.query(accelerator="L4")[0].to_dict() | {"colour": "blue"}
    with pytest.raises(ValueError, match="colour"):
        Offer.from_dict(data)


def test_offer_is_frozen_and_ids_are_stable(bundled):
    offer = bundled.query(cloud="aws", zone="use1-az4", instance_type="p4d.24xlarge", spot=True)[0]
    assert offer.id == "aws/us-east-1/use1-az4/p4d.24xlarge/spot"
    assert bundled.offer(offer.id) == offer
    assert bundled.offer("aws/us-east-1/use1-az4/nope/spot") is None
    with pytest.raises(AttributeError):
        offer.hourly_price = 0  # type: ignore[misc]


def test_exact_count_is_exact(bundled):
    v100_8 = bundled.query(accelerator="V100", accelerator_count=8)
    assert v100_8 and {o.accelerator_count for o in v100_8} == {8}
    assert {o.cloud for o in v100_8} == {"gcp"}  # AWS's 8x V100 (p3.16xlarge) is not bundled
    at_least = bundled.query(accelerator="V100", min_accelerator_count=4)
    assert {o.accelerator_count for o in at_least} == {4, 8}


def test_filters_combine(bundled):
    offers = bundled.query(
        clouds=["gcp"], region="us-central1", accelerator="H100", spot=True, max_price=20, cpus=50
    )
    assert offers
    for o in offers:
        assert o.cloud == "gcp" and o.region == "us-central1" and o.spot
        assert o.hourly_price <= 20 and o.vcpus >= 50
    assert bundled.query(accelerator="H100", limit=3) == bundled.query(accelerator="H100")[:3]


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("a100", "A100"),
        ("A100-80gb", "A100-80GB"),
        ("h100-80GB", "H100"),
        ("nvidia-tesla-t4", "T4"),
        ("NVIDIA-L4", "L4"),
        ("Tesla-V100", "V100"),
        ("TPU-V5P-128", "tpu-v5p-128"),
        ("A10", "A10"),  # known to SkyPilot (Azure, Lambda, OCI), offered by none of ours
        ("no-such-gpu", None),
    ],
)
def test_canonical_accelerator(bundled, spelling, canonical):
    assert bundled.canonical_accelerator(spelling) == canonical


def test_unknown_names_match_nothing_and_get_suggestions(bundled):
    assert bundled.query(accelerator="A1000") == []
    assert bundled.suggest_accelerators("A1000")[:1] == ["A100"]
    assert "H100" in bundled.suggest_accelerators("h10")
    assert "A10" not in bundled.accelerator_names()  # no offer carries it
    assert bundled.accelerator_clouds("a10") == ["Azure", "Lambda", "OCI"]


def test_images(bundled):
    assert bundled.image_for("aws", "us-east-1", "skypilot:custom-gpu-ubuntu") == (
        "ami-0c3bc6c2c633f3dd3"
    )
    assert bundled.image_for("aws", "us-east-1", "custom-gpu-ubuntu") == "ami-0c3bc6c2c633f3dd3"
    assert bundled.image_for("aws", "sa-east-1", "custom-gpu-ubuntu") is None
    gcp = bundled.image_for("gcp", "us-central1", "skypilot:gpu-debian-11")
    assert gcp and gcp.startswith("projects/deeplearning-platform-release/")
