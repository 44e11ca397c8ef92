"""The recovery policy, table by table: decisions on failures, relaunch steps, giving up."""

from __future__ import annotations

import pytest

from skyform.plan.model import BlockedPlacement, PlacedOffer
from skyform.recovery.policy import (
    Action,
    Failure,
    RecoveryPolicy,
    Strategy,
    backoff_seconds,
    decide,
    give_up,
    relaunch_steps,
)

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
    (Failure.PREEMPTED, {}, 0, 0, (), Action.RECOVER, False, "preempted"),
    (Failure.PREEMPTED, {}, 5, 1, (), Action.RECOVER, False, "preempted"),  # never counted
    (Failure.USER, {0: 3}, 0, 0, (), Action.FAIL, False, "max_restarts_on_errors is 0"),
    (Failure.USER, {0: 3}, 0, 1, (), Action.RESTART, True, "restart 1 of 1"),
    (Failure.USER, {0: 3, 1: 0}, 1, 1, (), Action.FAIL, False, "after 1 restart(s)"),
    (Failure.USER, {0: 0, 1: 137}, 0, 0, (137,), Action.RECOVER, False, "exit code 137 is in"),
    (Failure.USER, {0: 2}, 0, 2, (137,), Action.RESTART, True, "exit code 2: restart 1 of 2"),
    (Failure.SETUP, {0: 1}, 0, 0, (1,), Action.FAIL, False, "setup failed with exit code 1"),
    (Failure.SETUP, {0: 1}, 0, 1, (), Action.RESTART, True, "setup failed"),
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


@pytest.mark.parametrize(
    ("rounds", "limit", "stop"), [(0, 3, False), (2, 3, False), (3, 3, True), (1, 1, True)]
)
def test_give_up_after_bounded_rounds(rounds, limit, stop):
    assert give_up(rounds, RecoveryPolicy(max_rounds=limit)) is stop


def test_backoff_grows_and_is_capped():
    assert [backoff_seconds(n) for n in range(0, 8)] == [0.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
