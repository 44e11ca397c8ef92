"""The plan records catalog offers as PlacedOffer: the two must keep the same fields."""

from __future__ import annotations

from skyform.plan.catalog.offer import FIELDS, Offer
from skyform.plan.model import PlacedOffer


def test_placed_offer_has_exactly_the_catalog_offer_fields():
    assert list(PlacedOffer.model_fields) == list(FIELDS)


def test_an_offer_round_trips_through_a_plan():
    offer = Offer(
        cloud="gcp",
        region="us-central1",
        zone="us-central1-a",
        instance_type="n1-standard-8",
        spot=True,
        hourly_price=0.51234,
        accelerator="V100",
        accelerator_count=2.0,
        vcpus=8.0,
        memory_gib=30.0,
    )
    placed = PlacedOffer.model_validate(offer.to_dict())
    assert Offer.from_dict(placed.model_dump()) == offer
