"""Data-transfer cost and time between two locations (egress.csv / fixtures_tiny_egress.csv).

Rules, from the source location A = (cloud, region, zone) to B:
- same cloud, region and zone (or a zone unknown on either side, or both regions unknown): free;
- same region, other zone: the source region's `same-region-other-zone` rate;
- same cloud, other region: the `A.region -> B.region` row;
- different clouds: the source cloud's `internet` rate for A's region;
- tiered rows (TierStartGB/TierEndGB, per month per source) are applied from 0 GB, so moving
  G GB costs what the first G GB of a month would.
Fallbacks when a row is missing: an unknown region pair (or a region unknown on one side) is
priced at the highest `internet` rate the source cloud lists (an upper bound: the data can always
go over the internet); a missing cross-zone row means the cloud does not charge for it; a cloud
with no rows at all (local, ssh, kubernetes unless configured) is free.
Transfer time ≈ GB · 8 / 10 Gbps whenever the locations differ, whatever the price.
"""

from __future__ import annotations

from typing import NamedTuple

from skyform.plan.catalog.offer import Location

INTERNET = "internet"
SAME_REGION_OTHER_ZONE = "same-region-other-zone"
BANDWIDTH_GBPS = 10.0
EGRESS_COLUMNS = ("Cloud", "SourceRegion", "Destination", "PricePerGB")


class EgressRow(NamedTuple):
    cloud: str
    source_region: str
    destination: str
    tier_start_gb: float
    tier_end_gb: float | None  # None = unbounded
    price_per_gb: float


class Transfer(NamedTuple):
    cost: float  # USD
    seconds: float


class EgressTable:
    # `transfer(a, b, gb)` depends only on a's and b's cloud and region and on whether they
    # are the same place (the rules above): the optimizer may rely on it (Problem).
    by_region = True

    def __init__(self, rows: list[EgressRow]) -> None:
        self.rows = rows
        self._tiers: dict[tuple[str, str, str], list[EgressRow]] = {}
        for row in rows:
            self._tiers.setdefault((row.cloud, row.source_region, row.destination), []).append(row)
        for tiers in self._tiers.values():
            tiers.sort(key=lambda r: r.tier_start_gb)
        self._clouds = {row.cloud for row in rows}
        self._worst: dict[str, list[EgressRow]] = {}  # cloud -> its dearest internet tiers
        self._transfers: dict[tuple, Transfer] = {}

    def cost(self, source: Location, destination: Location, gb: float) -> float:
        """USD to move `gb` GB from `source` to `destination`."""
        if gb <= 0 or source.cloud not in self._clouds or _same_place(source, destination):
            return 0.0
        if source.cloud != destination.cloud:
            return self._tiered(source.cloud, source.region, INTERNET, gb)
        if source.region == destination.region:
            return self._tiered(source.cloud, source.region, SAME_REGION_OTHER_ZONE, gb)
        return self._tiered(source.cloud, source.region, destination.region or "?", gb)

    def seconds(self, source: Location, destination: Location, gb: float) -> float:
        """Estimated transfer time at 10 Gbps (0 when nothing moves)."""
        if gb <= 0 or _same_place(source, destination):
            return 0.0
        return gb * 8.0 / BANDWIDTH_GBPS

    def transfer(self, source: Location, destination: Location, gb: float) -> Transfer:
        # Both figures depend on the two regions and on whether the places are the same,
        # not on which zones: pruning a DAG over a big catalog asks for ~10^5 zone pairs
        # of a few hundred region pairs, so answers are kept per region pair.
        key = (
            source.cloud,
            source.region,
            destination.cloud,
            destination.region,
            _same_place(source, destination),
            gb,
        )
        found = self._transfers.get(key)
        if found is None:
            found = self._transfers[key] = Transfer(
                self.cost(source, destination, gb), self.seconds(source, destination, gb)
            )
        return found

    def _tiered(self, cloud: str, region: str | None, destination: str, gb: float) -> float:
        tiers = self._tiers.get((cloud, region or "", destination))
        if tiers is None:
            if destination == SAME_REGION_OTHER_ZONE:
                return 0.0  # a cloud that lists no cross-zone rate does not charge one
            tiers = self._worst_internet(cloud)
        total = 0.0
        for tier in tiers:
            end = gb if tier.tier_end_gb is None else min(gb, tier.tier_end_gb)
            if end > tier.tier_start_gb:
                total += (end - tier.tier_start_gb) * tier.price_per_gb
        return round(total, 6)

    def _worst_internet(self, cloud: str) -> list[EgressRow]:
        found = self._worst.get(cloud)
        if found is None:
            tiers = [t for (c, _, d), t in self._tiers.items() if c == cloud and d == INTERNET]
            found = max(tiers, key=lambda t: t[0].price_per_gb) if tiers else []
            self._worst[cloud] = found  # regions the table does not list are all priced so
        return found


def _same_place(a: Location, b: Location) -> bool:
    if a.cloud != b.cloud:
        return False
    if a.region is None or b.region is None or a.region != b.region:
        return a.region == b.region
    return a.zone is None or b.zone is None or a.zone == b.zone
