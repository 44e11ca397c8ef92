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

A recovery is a number of rounds over the steps; `give_up` says when to stop.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict

from skyform.plan.model import BlockedPlacement, PlacedOffer


class _Model(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


class Strategy(str, Enum):
    FAILOVER = "FAILOVER"
    EAGER_NEXT_REGION = "EAGER_NEXT_REGION"

    @classmethod
    def parse(cls, text: str | None) -> Strategy:
        if not text:
            return cls.EAGER_NEXT_REGION  # SkyPilot's default
        key = text.strip().upper().replace("-", "_")
        try:
            return cls(key)
        except ValueError:
            names = ", ".join(s.value for s in cls)
            raise ValueError(f"unknown recovery strategy {text!r} (known: {names})") from None


class Failure(str, Enum):
    PREEMPTED = "PREEMPTED"  # nodes lost: capacity went away
    USER = "USER"  # the cluster is healthy and the job exited non-zero
    SETUP = "SETUP"  # setup exited non-zero on a healthy cluster


class Action(str, Enum):
    RECOVER = "RECOVER"  # tear the cluster down, re-plan around it, relaunch
    RESTART = "RESTART"  # run the job again on the same cluster
    FAIL = "FAIL"


class Decision(_Model):
    action: Action
    reason: str
    counts_as_restart: bool = False


class RecoveryPolicy(_Model):
    strategy: Strategy = Strategy.EAGER_NEXT_REGION
    max_restarts_on_errors: int = 0
    recover_on_exit_codes: tuple[int, ...] = ()
    max_rounds: int = 3  # relaunch rounds over the steps before FAILED_NO_RESOURCE


def decide(
    failure: Failure,
    *,
    exit_codes: dict[int, int | None],
    restarts_done: int,
    policy: RecoveryPolicy,
) -> Decision:
    if failure is Failure.PREEMPTED:
        return Decision(action=Action.RECOVER, reason="nodes were lost (preempted)")
    codes = sorted({c for c in exit_codes.values() if c not in (0, None)})
    recoverable = [c for c in codes if c in policy.recover_on_exit_codes]
    if failure is Failure.USER and recoverable:
        return Decision(
            action=Action.RECOVER, reason=f"exit code {recoverable[0]} is in recover_on_exit_codes"
        )
    what = "setup" if failure is Failure.SETUP else "the job"
    shown = f"exit code {codes[0]}" if codes else "a failure"
    if restarts_done < policy.max_restarts_on_errors:
        n = restarts_done + 1
        return Decision(
            action=Action.RESTART,
            counts_as_restart=True,
            reason=f"{what} failed with {shown}: restart {n} of "
            f"{policy.max_restarts_on_errors} (max_restarts_on_errors)",
        )
    limit = policy.max_restarts_on_errors
    tail = f" after {limit} restart(s)" if limit else " (max_restarts_on_errors is 0)"
    return Decision(action=Action.FAIL, reason=f"{what} failed with {shown}{tail}")


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


def give_up(rounds_done: int, policy: RecoveryPolicy) -> bool:
    return rounds_done >= policy.max_rounds


def backoff_seconds(rounds_done: int, *, base: float = 2.0, cap: float = 60.0) -> float:
    """Wait between relaunch rounds: 2, 4, 8 … seconds, at most `cap`."""
    return min(cap, base * (2 ** max(0, rounds_done - 1))) if rounds_done else 0.0
