"""The QPS autoscaler: how many replicas a service wants, from the request log.

SkyPilot's algorithm (sky/serve/autoscalers.py, notes §1.7): qps = requests in the last 60 s
/ 60; target = ceil(qps / target_qps_per_replica) clipped to [min, max]; a change needs
`delay / decision interval` consecutive ticks that want it (hysteresis), except leaving 0,
which is immediate. Two guards against SkyPilot #3359 (a service stuck at zero under
traffic): any request in the window wants at least one replica, and an update recomputes
the target from the same live window (never from an empty one). Overprovisioned replicas
are added on top of a non-zero target only, so a service scaled to zero is really at zero.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from skyform.serve.replicas import SCALE_DOWN_ORDER, TERMINAL_STATUSES, ReplicaStatus
from skyform.spec.service_models import ReplicaPolicy, capacity_for

QPS_WINDOW_SECONDS = 60.0
DECISION_INTERVAL_SECONDS = 20.0
DECISION_INTERVAL_AT_ZERO_SECONDS = 5.0


def window_qps(
    counts: Iterable[tuple[int, int]], now: float, window: float = QPS_WINDOW_SECONDS
) -> float:
    """Requests per second over the last `window` seconds of (second, count) log lines."""
    total = sum(n for second, n in counts if now - window <= second <= now)
    return total / window


@dataclass(frozen=True)
class ReplicaView:
    """What the autoscaler needs to know of one replica."""

    replica_id: int
    version: int
    status: ReplicaStatus
    is_spot: bool = False
    accelerator: str | None = None

    @property
    def live(self) -> bool:
        return self.status not in TERMINAL_STATUSES


@dataclass(frozen=True)
class Launch:
    version: int
    use_spot: bool | None = None  # None: as the task file says
    location: str | None = None  # the spot placer's choice


@dataclass(frozen=True)
class ScaleDecision:
    launch: tuple[Launch, ...] = ()
    terminate: tuple[int, ...] = ()
    reason: str = ""

    def __bool__(self) -> bool:
        return bool(self.launch or self.terminate)


@dataclass
class Autoscaler:
    """Hysteresis state; every method is a function of its arguments and this state."""

    policy: ReplicaPolicy
    interval: float = DECISION_INTERVAL_SECONDS
    target: int = field(init=False)
    up_ticks: int = field(default=0, init=False)
    down_ticks: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.target = self.policy.min_replicas

    @property
    def up_threshold(self) -> int:
        return int(self.policy.upscale_delay_seconds / self.interval)

    @property
    def down_threshold(self) -> int:
        return int(self.policy.downscale_delay_seconds / self.interval)

    def wanted(self, qps: float, replicas: Sequence[ReplicaView] = ()) -> int:
        """The target this QPS calls for, before hysteresis."""
        policy, target_qps = self.policy, self.policy.target_qps_per_replica
        if target_qps is None:
            return policy.min_replicas
        if isinstance(target_qps, dict):
            raw = _instance_aware(qps, target_qps, replicas)
        else:
            raw = math.ceil(qps / target_qps - 1e-9)
        if qps > 0:
            raw = max(raw, 1)  # traffic always wants a replica (SkyPilot #3359)
        return min(max(raw, policy.min_replicas), policy.upper)

    def tick(self, qps: float, replicas: Sequence[ReplicaView] = ()) -> int:
        """One decision tick: returns the (possibly unchanged) target."""
        wanted = self.wanted(qps, replicas)
        if self.target == 0 and wanted > 0:
            self.target, self.up_ticks, self.down_ticks = wanted, 0, 0  # wake at once
        elif wanted > self.target:
            self.up_ticks, self.down_ticks = self.up_ticks + 1, 0
            if self.up_ticks >= self.up_threshold:
                self.target, self.up_ticks = wanted, 0
        elif wanted < self.target:
            self.down_ticks, self.up_ticks = self.down_ticks + 1, 0
            if self.down_ticks >= self.down_threshold:
                self.target, self.down_ticks = wanted, 0
        else:
            self.up_ticks = self.down_ticks = 0
        return self.target

    def updated(self, policy: ReplicaPolicy, qps: float, target: int | None = None) -> None:
        """A new service version: its policy applies at once (no hysteresis), to the same
        live traffic; or `target`, the one the update's reviewed plan was computed with
        (clipped to the policy), so the replicas launched are the ones it showed."""
        self.policy = policy
        if target is None:
            self.target = self.wanted(qps)
        else:
            self.target = min(max(target, policy.min_replicas), policy.upper)
        self.up_ticks = self.down_ticks = 0

    @property
    def final_target(self) -> int:
        return self.target + self.policy.num_overprovision if self.target > 0 else 0

    def next_interval(self) -> float:
        return DECISION_INTERVAL_AT_ZERO_SECONDS if self.final_target == 0 else self.interval

    def decide(
        self, replicas: Sequence[ReplicaView], version: int, ready_spot: int
    ) -> ScaleDecision:
        """Launches and terminations that bring the latest version to the final target."""
        latest = [r for r in replicas if r.version == version and r.live]
        if not self.policy.uses_ondemand_fallback:
            return scale_to(latest, self.final_target, version, None)
        spot_target, ondemand_target = fallback_targets(
            self.policy, self.final_target, self.target, ready_spot
        )
        spot = scale_to([r for r in latest if r.is_spot], spot_target, version, True)
        ondemand = scale_to([r for r in latest if not r.is_spot], ondemand_target, version, False)
        reason = "; ".join(x.reason for x in (spot, ondemand) if x.reason)
        return ScaleDecision(
            spot.launch + ondemand.launch, spot.terminate + ondemand.terminate, reason
        )


def fallback_targets(
    policy: ReplicaPolicy, final_target: int, target: int, ready_spot: int
) -> tuple[int, int]:
    """(spot, on-demand) counts: `base` on-demand replicas always; with dynamic fallback,
    on-demand replicas also cover the spot replicas that are not READY (capped at the
    target without overprovisioning)."""
    base = policy.base_ondemand_fallback_replicas
    spot_target = max(0, final_target - base)
    ondemand = base
    if policy.dynamic_ondemand_fallback:
        ondemand += max(0, spot_target - ready_spot)
    return spot_target, min(ondemand, target)


def scale_to(
    live: Sequence[ReplicaView], target: int, version: int, use_spot: bool | None
) -> ScaleDecision:
    kind = {True: "spot ", False: "on-demand ", None: ""}[use_spot]
    if len(live) < target:
        missing = target - len(live)
        return ScaleDecision(
            launch=tuple(Launch(version, use_spot) for _ in range(missing)),
            reason=f"{len(live)} {kind}replicas of {target} wanted: launch {missing}",
        )
    if len(live) > target:
        excess = len(live) - target
        chosen = scale_down_order(live)[:excess]
        return ScaleDecision(
            terminate=tuple(r.replica_id for r in chosen),
            reason=f"{len(live)} {kind}replicas of {target} wanted: terminate {excess}",
        )
    return ScaleDecision()


def scale_down_order(replicas: Iterable[ReplicaView]) -> list[ReplicaView]:
    """Least useful first: by status (PENDING … READY), oldest version, highest id."""
    rank = {status: i for i, status in enumerate(SCALE_DOWN_ORDER)}
    return sorted(replicas, key=lambda r: (rank.get(r.status, -1), r.version, -r.replica_id))


def _instance_aware(qps: float, target: dict[str, float], replicas: Sequence[ReplicaView]) -> int:
    """SkyPilot's InstanceAwareRequestRateAutoscaler: capacities per accelerator."""
    counted = [
        r
        for r in replicas
        if r.status in (ReplicaStatus.READY, ReplicaStatus.STARTING, ReplicaStatus.PROVISIONING)
    ]
    total = sum(capacity_for(target, r.accelerator) for r in counted)
    if qps >= total:
        return len(counted) + math.ceil((qps - total) / max(target.values()) - 1e-9)
    ready = sorted(
        (capacity_for(target, r.accelerator) for r in counted if r.status is ReplicaStatus.READY),
        reverse=True,
    )
    needed, covered = 0, 0.0
    for capacity in ready:
        if covered > qps:
            break
        needed, covered = needed + 1, covered + capacity
    return needed
