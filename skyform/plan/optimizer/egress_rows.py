"""How the egress prices between the places two tasks can use are shaped, for ilp.py: by
region pair (one price between any two different places of regions A and B) or not."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyform.plan.optimizer.prepared import Prepared


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


def region_blocks(
    prep: Prepared, src: list[int], dst: list[int], gb: float, regions: list[tuple]
) -> tuple[dict, dict]:
    """({(l, l): move} for every place l both tasks can use, the blocks `hierarchical` finds),
    for an egress priced by region (Problem.egress_by_region): there every pair of different
    places of regions A and B moves data alike, so one such pair per (A, B) tells the price."""
    src_regions, dst_regions = (
        by_region(dict.fromkeys(src), regions),
        by_region(dict.fromkeys(dst), regions),
    )
    blocks: dict[tuple, tuple[float, float]] = {}
    # (a region pair is asked thousands of times per edge on a big catalog: the first pair
    # of different places is among the first two of each side, places being distinct there)
    for a_region, mine in src_regions.items():
        a = mine[0]
        row = prep.moves_from(a, gb, [theirs[0] for theirs in dst_regions.values()])
        for (b_region, theirs), moved in zip(dst_regions.items(), row, strict=True):
            if theirs[0] != a:
                blocks[(a_region, b_region)] = moved
            elif len(theirs) > 1:
                blocks[(a_region, b_region)] = prep.move(a, theirs[1], gb)
            elif len(mine) > 1:
                blocks[(a_region, b_region)] = prep.move(mine[1], a, gb)
    theirs_too = set(dst)
    same = {(p, p): prep.move(p, p, gb) for p in src if p in theirs_too}
    for (place, _), value in same.items():
        blocks.setdefault((regions[place], regions[place]), value)  # only one shared place
    return same, blocks
