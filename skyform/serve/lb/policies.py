"""Load-balancing policies: pure choice of a replica given the in-flight counts.

SkyPilot's three (sky/serve/load_balancing_policies.py): `round_robin` cycles; `least_load`
takes the fewest in-flight requests; `instance_aware_least_load` divides in-flight by the
replica's QPS capacity for its accelerator. Ties go round-robin, so equal replicas share
sequential traffic instead of the first one taking all of it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from skyform.spec.service_models import LB_POLICIES, capacity_for


@dataclass(frozen=True)
class Target:
    """One replica the LB may route to."""

    url: str
    replica_id: int
    version: int = 1
    accelerator: str | None = None


class Policy:
    """Chooses a target; `exclude` holds the URLs already tried for this request."""

    name = "round_robin"

    def __init__(self) -> None:
        self._cursor = 0

    def select(
        self,
        targets: Sequence[Target],
        inflight: Mapping[str, int],
        exclude: Collection[str] = (),
    ) -> Target | None:
        candidates = [t for t in targets if t.url not in exclude] if exclude else targets
        if not candidates:
            return None
        return self._pick(candidates, inflight)

    def _pick(self, candidates: Sequence[Target], inflight: Mapping[str, int]) -> Target:
        return self._next(candidates)

    def _next(self, candidates: Sequence[Target]) -> Target:
        if len(candidates) == 1:
            # no choice: the turn stays, or a replica that fails first on every request
            # (its load stays 0) would hand every retry to the same one of the others
            return candidates[0]
        chosen = candidates[self._cursor % len(candidates)]
        self._cursor += 1
        return chosen


class RoundRobin(Policy):
    name = "round_robin"


class LeastLoad(Policy):
    name = "least_load"

    def _loads(self, candidates: Sequence[Target], inflight: Mapping[str, int]) -> list[float]:
        return [inflight.get(t.url, 0) for t in candidates]

    def _pick(self, candidates: Sequence[Target], inflight: Mapping[str, int]) -> Target:
        loads = self._loads(candidates, inflight)
        low = min(loads)
        if loads.count(low) == len(loads):  # all alike (at low load, always): no list to make
            return self._next(candidates)
        least = [t for t, load in zip(candidates, loads, strict=True) if load <= low + 1e-12]
        return self._next(least)


class InstanceAwareLeastLoad(LeastLoad):
    name = "instance_aware_least_load"

    def __init__(self, target_qps: float | dict[str, float] | None = None) -> None:
        super().__init__()
        self.target_qps = target_qps

    def _loads(self, candidates: Sequence[Target], inflight: Mapping[str, int]) -> list[float]:
        return [inflight.get(t.url, 0) / self._capacity(t) for t in candidates]

    def _capacity(self, target: Target) -> float:
        if self.target_qps is None:
            return 1.0
        return capacity_for(self.target_qps, target.accelerator) or 1.0


_POLICIES: dict[str, Callable[[float | dict[str, float] | None], Policy]] = {
    "round_robin": lambda _qps: RoundRobin(),
    "least_load": lambda _qps: LeastLoad(),
    "instance_aware_least_load": InstanceAwareLeastLoad,
}
assert set(_POLICIES) == set(LB_POLICIES)


def make_policy(name: str, target_qps: float | dict[str, float] | None = None) -> Policy:
    return _POLICIES[name](target_qps)
