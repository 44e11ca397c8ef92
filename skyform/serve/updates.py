"""Versions: rolling and blue-green updates, and automatic rollback (beyond SkyPilot).

SkyPilot (notes §1.8): rolling keeps `final_target - latest READY` old replicas, dropping
launching ones first, and routes to every READY replica; blue-green routes only to the
newest version with its min_replicas READY (else the oldest ready one) and drops versions
older than that. SkyPilot has no rollback (#4312): here, a new version that never had a
READY replica is rolled back when one of its replicas failed unrecoverably (app exited, or
no probe passed in initial_delay_seconds) or when it is not READY within its budget; the
old version's replicas are still up (neither mode removes them before the new version is
READY), so nothing stops serving.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from skyform.serve.autoscaler import Autoscaler, ReplicaView, scale_down_order
from skyform.serve.replicas import ReplicaStatus

READY = ReplicaStatus.READY
UNRECOVERABLE = (ReplicaStatus.FAILED, ReplicaStatus.FAILED_INITIAL_DELAY)


def active_versions(
    replicas: Sequence[ReplicaView], mode: str, min_replicas_of: Callable[[int], int]
) -> list[int]:
    """The versions the load balancer routes to."""
    ready_versions = sorted({r.version for r in replicas if r.status is READY})
    if mode == "rolling" or not ready_versions:
        return ready_versions
    for version in reversed(ready_versions):
        ready = sum(1 for r in replicas if r.version == version and r.status is READY)
        if ready >= max(1, min_replicas_of(version)):
            return [version]
    return [ready_versions[0]]


def outdated_to_terminate(
    replicas: Sequence[ReplicaView],
    latest: int,
    final_target: int,
    mode: str,
    min_replicas_of: Callable[[int], int],
) -> list[int]:
    old = [r for r in replicas if r.version < latest and r.live]
    if not old:
        return []
    if mode == "blue_green":
        floor = min(active_versions(replicas, mode, min_replicas_of) or [latest])
        return [r.replica_id for r in old if r.version < floor]
    latest_ready = sum(1 for r in replicas if r.version == latest and r.status is READY)
    keep = max(0, final_target - latest_ready)
    # drop the least useful old replicas first (launching before READY)
    ordered = scale_down_order(old)
    return [r.replica_id for r in ordered[: max(0, len(old) - keep)]]


@dataclass(frozen=True)
class Rollout:
    """A version being rolled out: when it started and how long it may take to be READY."""

    version: int
    previous: int | None  # the last version that served (None on the first deploy)
    started_at: float
    budget_seconds: float


def rollback_reason(
    replicas: Sequence[ReplicaView], rollout: Rollout, now: float, ever_ready: bool
) -> str | None:
    """Why the rollout must be undone, or None. `ever_ready`: any replica of the new version
    has passed a probe (then failures are replaced as usual, never rolled back)."""
    if rollout.previous is None or ever_ready:
        return None
    mine = [r for r in replicas if r.version == rollout.version]
    failed = [r for r in mine if r.status in UNRECOVERABLE]
    if failed:
        first = min(failed, key=lambda r: r.replica_id)
        return (
            f"version {rollout.version} never became READY: replica {first.replica_id} is "
            f"{first.status.value}; rolled back to version {rollout.previous}"
        )
    if now - rollout.started_at > rollout.budget_seconds:
        return (
            f"version {rollout.version} was not READY within {rollout.budget_seconds:g} s; "
            f"rolled back to version {rollout.previous}"
        )
    return None


@dataclass(frozen=True)
class ReplicaChange:
    replica_id: int
    version: int
    status: str
    action: Literal["relabel", "replace", "remove"]


@dataclass(frozen=True)
class UpdatePreview:
    """What `serve update` will do to the running replicas (the plan's diff)."""

    service: str
    old_version: int
    new_version: int
    mode: str
    target: int  # replicas of the new version wanted at once (overprovision included)
    changes: tuple[ReplicaChange, ...]
    launch: int  # new replicas of the new version: the controller's first decision
    why_new: str | None  # why replicas are replaced rather than relabelled
    scale_target: int = 0  # the autoscaler's target the controller is handed
    qps: float = 0.0  # the live traffic it was computed from

    why_target: str = ""  # what the target comes from

    def count(self, action: str) -> int:
        return sum(1 for c in self.changes if c.action == action)


def preview_update(
    service: str,
    replicas: Sequence[ReplicaView],
    old_version: int,
    new_version: int,
    mode: str,
    autoscaler: Autoscaler,
    why_new: str | None,
    qps: float = 0.0,
) -> UpdatePreview:
    """SkyPilot's reuse rule (notes §1.8): live replicas of the running version whose task
    (`service:` aside) equals the new one are relabelled in place, up to the new target,
    best first; every other live replica is replaced (it serves until the new version is
    READY) or, beyond the target, removed. `autoscaler` holds the new version's policy and
    the target the controller will be handed (`Autoscaler.updated`); the replicas to launch
    are its first decision over the relabelled replicas, so on-demand fallback replicas
    count too."""
    target = autoscaler.final_target
    live = [r for r in replicas if r.live]
    current = [r for r in live if r.version == old_version]
    relabel: set[int] = set()
    if why_new is None:
        best_first = list(reversed(scale_down_order(current)))
        relabel = {r.replica_id for r in best_first[:target]}
    replace_room = max(0, target - len(relabel))
    changes = []
    for r in sorted(live, key=lambda r: r.replica_id):
        if r.replica_id in relabel:
            action: Literal["relabel", "replace", "remove"] = "relabel"
        elif replace_room > 0:
            action, replace_room = "replace", replace_room - 1
        else:
            action = "remove"
        changes.append(ReplicaChange(r.replica_id, r.version, r.status.value, action))
    relabelled = [replace(r, version=new_version) for r in current if r.replica_id in relabel]
    ready_spot = sum(1 for r in relabelled if r.is_spot and r.status is READY)
    first = autoscaler.decide(relabelled, new_version, ready_spot=ready_spot)
    return UpdatePreview(
        service=service,
        old_version=old_version,
        new_version=new_version,
        mode=mode,
        target=target,
        changes=tuple(changes),
        launch=len(first.launch),
        why_new=why_new,
        scale_target=autoscaler.target,
        qps=qps,
        why_target=_why_target(autoscaler, qps),
    )


def _why_target(autoscaler: Autoscaler, qps: float) -> str:
    policy = autoscaler.policy
    why = (
        f"the live traffic: {qps:.2f} qps over the last 60 s"
        if autoscaler.target > policy.min_replicas
        else f"min_replicas {policy.min_replicas}"
    )
    extra = policy.num_overprovision if autoscaler.target > 0 else 0
    return why + (f", plus {extra} overprovisioned" if extra else "")
