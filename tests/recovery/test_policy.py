"""The recovery policy, table by table: decisions on failures, relaunch steps, giving up."""

from __future__ import annotations

from itertools import pairwise

import pytest

from skyform.config import RecoverySettings
from skyform.plan.model import BlockedPlacement, PlacedOffer
from skyform.recovery.policy import (
    Failure,
    RecoveryPolicy,
    Remedy,
    StepFailure,
    backoff_seconds,
    decide,
    give_up,
    next_wait,
    no_capacity_reason,
    relaunch_steps,
)
from skyform.spec.recovery import Strategy

SPOT_WEST = PlacedOffer(
    cloud="ssh",
    context="lab",
    region="west",
    zone="west-a",
    instance_type="host",
    spot=True,
    hourly_price=0.1,
)
AWS = PlacedOffer(
    cloud="aws",
    region="us-east-1",
    zone="use1-az4",
    instance_type="p4d.24xlarge",
    spot=True,
    hourly_price=8.12,
)

DECISIONS = [
    # failure, exit codes, restarts done, max restarts, recover codes -> action, counts, reason
    (Failure.PREEMPTED, {}, 0, 0, (), Remedy.RECOVER, False, "preempted"),
    (Failure.PREEMPTED, {}, 5, 1, (), Remedy.RECOVER, False, "preempted"),  # never counted
    (Failure.USER, {0: 3}, 0, 0, (), Remedy.FAIL, False, "max_restarts_on_errors is 0"),
    (Failure.USER, {0: 3}, 0, 1, (), Remedy.RESTART, True, "restart 1 of 1"),
    (Failure.USER, {0: 3, 1: 0}, 1, 1, (), Remedy.FAIL, False, "after 1 restart(s)"),
    (Failure.USER, {0: 0, 1: 137}, 0, 0, (137,), Remedy.RECOVER, False, "exit code 137 is in"),
    (Failure.USER, {0: 2}, 0, 2, (137,), Remedy.RESTART, True, "exit code 2: restart 1 of 2"),
    (Failure.SETUP, {0: 1}, 0, 0, (1,), Remedy.FAIL, False, "setup failed with exit code 1"),
    (Failure.SETUP, {0: 1}, 0, 1, (), Remedy.RESTART, True, "setup failed"),
]


@pytest.mark.parametrize(
    ("failure", "codes", "done", "limit", "recover", "action", "counts", "reason"), DECISIONS
)
def test_decisions(failure, codes, done, limit, recover, action, counts, reason):
    policy = RecoveryPolicy(max_restarts_on_errors=limit, recover_on_exit_codes=recover)
    decision = decide(failure, exit_codes=codes, restarts_done=done, policy=policy)
    assert decision.action is action
    assert decision.counts_as_restart is counts
    assert reason in decision.reason


def test_eager_next_region_blocks_the_launched_region_then_tries_anywhere():
    first, second = relaunch_steps(Strategy.EAGER_NEXT_REGION, SPOT_WEST, why="preempted")
    assert first.blocked == [
        BlockedPlacement(
            cloud="ssh", context="lab", region="west", reason="preempted in ssh/lab/west"
        )
    ]
    assert first.allowed == [] and second.blocked == [] and second.allowed == []
    # the block matches what was launched, not what was requested (SkyPilot #10021)
    assert first.blocked[0].matches(SPOT_WEST)
    assert not first.blocked[0].matches(SPOT_WEST.model_copy(update={"region": "east"}))


def test_failover_retries_the_launched_region_any_zone_first():
    first, second = relaunch_steps(Strategy.FAILOVER, AWS, why="preempted")
    (allowed,) = first.allowed
    assert (allowed.cloud, allowed.region, allowed.zone) == ("aws", "us-east-1", None)
    assert allowed.matches(AWS.model_copy(update={"zone": "use1-az1"}))
    assert not allowed.matches(AWS.model_copy(update={"region": "us-west-2"}))
    assert first.blocked == [] and second.allowed == [] and second.blocked == []


@pytest.mark.parametrize(
    ("text", "strategy"),
    [
        (None, Strategy.EAGER_NEXT_REGION),
        ("failover", Strategy.FAILOVER),
        ("EAGER_NEXT_REGION", Strategy.EAGER_NEXT_REGION),
        ("eager-next-region", Strategy.EAGER_NEXT_REGION),
    ],
)
def test_strategy_names(text, strategy):
    assert Strategy.parse(text) is strategy


def test_unknown_strategy_is_an_error():
    with pytest.raises(ValueError, match="unknown recovery strategy 'sometimes'"):
        Strategy.parse("sometimes")


HOUR = 3600.0

GIVING_UP = [
    # rounds done, seconds since the capacity was lost, give_up_after, max_rounds -> stop
    (3, 7.4, HOUR, None, False),  # 3 rounds in 7.4 s used to be the end: now only the start
    (12, HOUR - 1, HOUR, None, False),
    (13, HOUR, HOUR, None, True),  # the deadline, however many rounds it took
    (2, 10.0, HOUR, 2, True),  # max_rounds, when set, can come first
    (5, 3 * HOUR, 10 * HOUR, 8, False),
    (10_000, 1e9, None, None, False),  # give_up_after: null waits forever, as SkyPilot
]


@pytest.mark.parametrize(("rounds", "elapsed", "deadline", "max_rounds", "stop"), GIVING_UP)
def test_give_up_at_the_deadline_or_max_rounds_whichever_first(
    rounds, elapsed, deadline, max_rounds, stop
):
    policy = RecoveryPolicy(give_up_after=deadline, max_rounds=max_rounds)
    assert give_up(rounds, elapsed, policy) is stop


def test_patience_defaults_to_a_day_of_retries():
    assert RecoverySettings().give_up_after == RecoveryPolicy().give_up_after == 24 * HOUR
    assert RecoverySettings().max_rounds is None and RecoveryPolicy().max_rounds is None


def test_backoff_doubles_up_to_five_minutes():
    assert [backoff_seconds(n) for n in range(11)] == [
        0.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 300.0, 300.0,
    ]  # fmt: skip


def test_rounds_keep_coming_every_few_minutes_until_the_deadline():
    """An hour without capacity, rounds taking no time: when each round starts."""
    policy = RecoveryPolicy(give_up_after=HOUR)
    starts: list[float] = []
    clock = 0.0
    while True:
        clock += next_wait(len(starts), clock, policy)
        starts.append(clock)
        if give_up(len(starts), clock, policy):
            break
    assert starts[:9] == [0.0, 2.0, 6.0, 14.0, 30.0, 62.0, 126.0, 254.0, 510.0]
    assert max(b - a for a, b in pairwise(starts)) == 300.0
    assert starts[-1] == HOUR and len(starts) == 20  # the last round runs at the deadline


def test_no_capacity_reason_lists_each_round_once():
    a = StepFailure(step="EAGER_NEXT_REGION: anywhere but ssh/lab/east", error="no offers")
    b = StepFailure(step="EAGER_NEXT_REGION: anywhere", error="0 free hosts")
    c = StepFailure(step="EAGER_NEXT_REGION: anywhere", error="host 10.0.0.5 refused")
    policy = RecoveryPolicy(give_up_after=90)
    reason = no_capacity_reason("train", [[a, b], [a, b], [a, b], [a, c]], 90.0, policy)
    assert reason == (
        "no capacity to relaunch task train: 4 round(s) over 1 min 30 s "
        "(recovery.give_up_after is 1 min 30 s). "
        "rounds 1-3: EAGER_NEXT_REGION: anywhere but ssh/lab/east: no offers; "
        "EAGER_NEXT_REGION: anywhere: 0 free hosts | "
        "round 4: EAGER_NEXT_REGION: anywhere but ssh/lab/east: no offers; "
        "EAGER_NEXT_REGION: anywhere: host 10.0.0.5 refused"
    )
