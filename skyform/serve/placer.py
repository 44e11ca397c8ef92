"""The spot placer `dynamic_fallback` (SkyPilot's SpotHedge, sky/serve/spot_placer.py).

Each candidate location is ACTIVE or PREEMPTED. A new spot replica goes to the cheapest
ACTIVE location no spot replica uses yet (else the cheapest ACTIVE one); a preemption or a
failed launch marks its location PREEMPTED, a successful launch ACTIVE; when fewer than two
locations remain ACTIVE, all are ACTIVE again. Ties go to the location listed first.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SpotLocation:
    infra: str  # aws/us-east-1/us-east-1a, ssh/lab/zone-a, ...
    hourly_price: float


class SpotPlacer:
    def __init__(self, locations: Sequence[SpotLocation]) -> None:
        if not locations:
            raise ValueError("a spot placer needs at least one location")
        self.locations = list(locations)
        self.preempted_at: set[str] = set()

    def active(self) -> list[SpotLocation]:
        return [loc for loc in self.locations if loc.infra not in self.preempted_at]

    def select(self, in_use: Collection[str]) -> SpotLocation:
        active = self.active()
        unused = [loc for loc in active if loc.infra not in in_use]
        pool = unused or active
        return min(pool, key=lambda loc: (loc.hourly_price, self.locations.index(loc)))

    def preempted(self, infra: str) -> None:
        self.preempted_at.add(infra)
        if len(self.active()) < 2:
            self.preempted_at.clear()

    def launched(self, infra: str) -> None:
        self.preempted_at.discard(infra)

    def spread(self, count: int) -> list[SpotLocation]:
        """Where `count` new spot replicas go, one after another (the plan's view)."""
        chosen: list[str] = []
        out = []
        for _ in range(count):
            location = self.select(chosen)
            chosen.append(location.infra)
            out.append(location)
        return out
