"""How the egress prices between the places two tasks can use are shaped, for ilp.py: by
region pair (one price between any two different places of regions A and B) or not."""

from __future__ import annotations

from typing import Any

from skyform.plan.catalog.offer import Location


def two_places(src: list[int], dst: list[int] | tuple) -> bool:
    """Can the two tasks be at two different places of this region?"""
    return any(a != b for a in src for b in dst)


def apart_hours(src_regions: dict, dst_regions: dict, blocks: dict) -> float | None:
    """The one transfer time between different places, if there is one."""
    hours = {
        h
        for (a, b), (_, h) in blocks.items()
        if a != b or two_places(src_regions.get(a, []), dst_regions.get(b, []))
    }
    return hours.pop() if len(hours) == 1 else None


def region_of(place: Location) -> tuple[str, str | None]:
    return place.cloud, place.region


def by_region(places: dict[int, Any], regions: list[tuple]) -> dict[tuple, list[int]]:
    found: dict[tuple, list[int]] = {}
    for place in places:
        found.setdefault(regions[place], []).append(place)
    return found


def hierarchical(src: list[int], dst: list[int], table: dict, regions: list[tuple]) -> dict | None:
    """(region A, region B) -> the one (usd, hours) between different places of A and B, or
    None when the prices are not that regular (then the model prices pairs of places)."""
    blocks: dict[tuple, tuple[float, float]] = {}
    diagonal: dict[tuple, tuple[float, float]] = {}
    for a in src:
        for b in dst:
            key = (regions[a], regions[b])
            value = table[(a, b)]
            if a == b:
                diagonal.setdefault(key, value)
                continue
            if blocks.setdefault(key, value) != value:
                return None
    for key, value in diagonal.items():
        blocks.setdefault(key, value)  # a region whose only shared pair is the same place
    return blocks
