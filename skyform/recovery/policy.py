"""Recovery policy (pure): what to do when a managed job's task ends badly, and where to
relaunch after capacity is lost.

Two questions, two functions:

- `decide(failure, ...)`: recover (relaunch elsewhere), restart (run again on the same,
  healthy cluster), or fail. Preemptions always recover and never count against
  `max_restarts_on_errors`; a user failure (healthy cluster, non-zero exit) restarts while
  restarts remain, or recovers when its exit code is in `recover_on_exit_codes`.
- `relaunch_steps(strategy, lost)`: the placements to try, in order, each as blocked /
  allowed placements for the optimizer.
    FAILOVER           1. the launched cloud and region, any zone   2. anywhere
    EAGER_NEXT_REGION  1. anywhere but the launched region           2. anywhere
  Both block the region the cluster was *launched* in (SkyPilot compares the *requested*
  region, which is usually unset, and so never blocks anything: its issue #10021).

A recovery is a number of rounds over the steps, with exponential backoff between rounds
(2 s, 4 s, 8 s ... capped at BACKOFF_CAP, SkyPilot's 5 minutes): spot capacity comes back in
minutes, so skyform keeps trying until `give_up_after` seconds have passed since the capacity
was lost (or `max_rounds` rounds, when set: whichever comes first). `give_up` says when to
stop; `no_capacity_reason` is what the job's FAILED_NO_RESOURCE reason says about the rounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from skyform.frozen import Frozen as _Model
from skyform.plan.model import BlockedPlacement, PlacedOffer
from skyform.spec.recovery import Strategy

BACKOFF_BASE = 2.0  # seconds before the second round
BACKOFF_CAP = 300.0  # the longest wait between rounds (SkyPilot's: 5 minutes)
DEFAULT_GIVE_UP_AFTER = 24 * 3600.0  # a spot shortage can last hours; waiting costs nothing


class Failure(str, Enum):
    PREEMPTED = "PREEMPTED"  # nodes lost: capacity went away
    USER = "USER"  # the cluster is healthy and the job exited non-zero
    SETUP = "SETUP"  # setup exited non-zero on a healthy cluster


class Remedy(str, Enum):
    RECOVER = "RECOVER"  # tear the cluster down, re-plan around it, relaunch
    RESTART = "RESTART"  # run the job again on the same cluster
    FAIL = "FAIL"


class Decision(_Model):
    action: Remedy
    reason: str
    counts_as_restart: bool = False


class RecoveryPolicy(_Model):
    strategy: Strategy = Strategy.EAGER_NEXT_REGION
    max_restarts_on_errors: int = 0
    recover_on_exit_codes: tuple[int, ...] = ()
    give_up_after: float | None = DEFAULT_GIVE_UP_AFTER  # seconds; None: never give up
    max_rounds: int | None = None  # relaunch rounds before giving up; None: no round limit


def decide(
    failure: Failure,
    *,
    exit_codes: dict[int, int | None],
    restarts_done: int,
    policy: RecoveryPolicy,
) -> Decision:
    if failure is Failure.PREEMPTED:
        return Decision(action=Remedy.RECOVER, reason="nodes were lost (preempted)")
    codes = sorted({c for c in exit_codes.values() if c not in (0, None)})
    recoverable = [c for c in codes if c in policy.recover_on_exit_codes]
    if failure is Failure.USER and recoverable:
        return Decision(
            action=Remedy.RECOVER, reason=f"exit code {recoverable[0]} is in recover_on_exit_codes"
        )
    what = "setup" if failure is Failure.SETUP else "the job"
    shown = f"exit code {codes[0]}" if codes else "a failure"
    if restarts_done < policy.max_restarts_on_errors:
        n = restarts_done + 1
        return Decision(
            action=Remedy.RESTART,
            counts_as_restart=True,
            reason=f"{what} failed with {shown}: restart {n} of "
            f"{policy.max_restarts_on_errors} (max_restarts_on_errors)",
        )
    limit = policy.max_restarts_on_errors
    tail = f" after {limit} restart(s)" if limit else " (max_restarts_on_errors is 0)"
    return Decision(action=Remedy.FAIL, reason=f"{what} failed with {shown}{tail}")


class RelaunchStep(_Model):
    """One relaunch attempt: offers must match one of `allowed` (when given) and none of
    `blocked`."""

    description: str
    blocked: list[BlockedPlacement] = []
    allowed: list[BlockedPlacement] = []


def launched_region(offer: PlacedOffer, reason: str) -> BlockedPlacement:
    return BlockedPlacement(
        cloud=offer.cloud, context=offer.context, region=offer.region, reason=reason
    )


def relaunch_steps(strategy: Strategy, lost: PlacedOffer, *, why: str) -> list[RelaunchStep]:
    region = f"{lost.cloud}/{lost.context + '/' if lost.context else ''}{lost.region}"
    if strategy is Strategy.FAILOVER:
        return [
            RelaunchStep(
                description=f"FAILOVER: retry {region}, any zone",
                allowed=[launched_region(lost, f"{why}: retry its region first")],
            ),
            RelaunchStep(description="FAILOVER: anywhere"),
        ]
    return [
        RelaunchStep(
            description=f"EAGER_NEXT_REGION: anywhere but {region}",
            blocked=[launched_region(lost, f"{why} in {region}")],
        ),
        RelaunchStep(description="EAGER_NEXT_REGION: anywhere, including " + region),
    ]


def give_up(rounds_done: int, elapsed: float, policy: RecoveryPolicy) -> bool:
    """After a failed round: stop at `max_rounds` rounds or `give_up_after` seconds since the
    recovery began, whichever comes first."""
    if policy.max_rounds is not None and rounds_done >= policy.max_rounds:
        return True
    return policy.give_up_after is not None and elapsed >= policy.give_up_after


def backoff_seconds(
    rounds_done: int, *, base: float = BACKOFF_BASE, cap: float = BACKOFF_CAP
) -> float:
    """Wait between relaunch rounds: none before the first, then 2, 4, 8 … seconds, at most
    `cap`."""
    return min(cap, base * (2 ** max(0, rounds_done - 1))) if rounds_done else 0.0


def next_wait(rounds_done: int, elapsed: float, policy: RecoveryPolicy) -> float:
    """Seconds to wait before the next round: the backoff, but never past the deadline (the
    last round runs at it)."""
    wait = backoff_seconds(rounds_done)
    if policy.give_up_after is not None:
        wait = min(wait, max(0.0, policy.give_up_after - elapsed))
    return wait


class StepFailure(_Model):
    """One relaunch step that found no capacity: which step, and what it was told."""

    step: str
    error: str


def seconds_text(seconds: float) -> str:
    """7 s · 4 min 10 s · 2 h 5 min"""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60} s" if s % 60 else "")
    return f"{s // 3600} h" + (f" {s % 3600 // 60} min" if s % 3600 // 60 else "")


def _round_span(first: int, last: int) -> str:
    return f"round {first}" if first == last else f"rounds {first}-{last}"


def no_capacity_reason(
    task: str, rounds: Sequence[Sequence[StepFailure]], elapsed: float, policy: RecoveryPolicy
) -> str:
    """Each round once: consecutive rounds that failed the same way are one entry."""
    groups: list[tuple[int, int, Sequence[StepFailure]]] = []
    for number, failures in enumerate(rounds, start=1):
        if groups and list(groups[-1][2]) == list(failures):
            groups[-1] = (groups[-1][0], number, failures)
        else:
            groups.append((number, number, failures))
    if policy.max_rounds is not None and len(rounds) >= policy.max_rounds:
        limit = f"recovery.max_rounds is {policy.max_rounds}"
    else:
        limit = f"recovery.give_up_after is {seconds_text(policy.give_up_after or 0)}"
    entries = [
        f"{_round_span(first, last)}: " + "; ".join(f"{f.step}: {f.error}" for f in failures)
        for first, last, failures in groups
    ]
    return (
        f"no capacity to relaunch task {task}: {len(rounds)} round(s) over "
        f"{seconds_text(elapsed)} ({limit}). " + " | ".join(entries)
    )
