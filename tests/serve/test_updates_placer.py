"""Rolling and blue-green updates, automatic rollback, and the spot placer."""

from __future__ import annotations

import pytest

from skyform.serve.autoscaler import ReplicaView
from skyform.serve.placer import SpotLocation, SpotPlacer
from skyform.serve.replicas import ReplicaStatus
from skyform.serve.updates import (
    Rollout,
    active_versions,
    outdated_to_terminate,
    rollback_reason,
)

S = ReplicaStatus


def two(_version: int) -> int:
    return 2


def fleet(*items: tuple[int, int, S]) -> list[ReplicaView]:
    return [ReplicaView(rid, version, status) for rid, version, status in items]


OLD = [(1, 1, S.READY), (2, 1, S.READY)]


@pytest.mark.parametrize(
    ("new", "terminated"),
    [
        ([(3, 2, S.PROVISIONING), (4, 2, S.PROVISIONING)], []),  # keep both old while none ready
        ([(3, 2, S.READY), (4, 2, S.STARTING)], [2]),  # one new READY: one old goes
        ([(3, 2, S.READY), (4, 2, S.READY)], [2, 1]),
    ],
)
def test_rolling_keeps_old_replicas_until_new_ones_are_ready(new, terminated):
    replicas = fleet(*OLD, *new)
    assert outdated_to_terminate(replicas, 2, 2, "rolling", two) == terminated
    assert active_versions(replicas, "rolling", two) == sorted(
        {r.version for r in replicas if r.status is S.READY}
    )


def test_rolling_drops_old_launching_replicas_before_old_ready_ones():
    replicas = fleet((1, 1, S.READY), (2, 1, S.PROVISIONING), (3, 2, S.READY))
    assert outdated_to_terminate(replicas, 2, 2, "rolling", two) == [2]


def test_blue_green_switches_only_when_the_new_version_has_min_replicas_ready():
    half = fleet(*OLD, (3, 2, S.READY), (4, 2, S.STARTING))
    assert active_versions(half, "blue_green", two) == [1]
    assert outdated_to_terminate(half, 2, 2, "blue_green", two) == []
    full = fleet(*OLD, (3, 2, S.READY), (4, 2, S.READY))
    assert active_versions(full, "blue_green", two) == [2]
    assert outdated_to_terminate(full, 2, 2, "blue_green", two) == [1, 2]


def test_rollback_when_the_new_version_crashes_before_any_ready():
    rollout = Rollout(version=2, previous=1, started_at=0, budget_seconds=1500)
    replicas = fleet(*OLD, (3, 2, S.STARTING), (4, 2, S.FAILED))
    reason = rollback_reason(replicas, rollout, now=100, ever_ready=False)
    assert reason == ("version 2 never became READY: replica 4 is FAILED; rolled back to version 1")
    assert rollback_reason(replicas, rollout, now=100, ever_ready=True) is None


def test_rollback_when_the_new_version_is_not_ready_within_its_budget():
    rollout = Rollout(version=2, previous=1, started_at=0, budget_seconds=300)
    replicas = fleet(*OLD, (3, 2, S.STARTING))
    assert rollback_reason(replicas, rollout, now=299, ever_ready=False) is None
    assert "not READY within 300 s" in (rollback_reason(replicas, rollout, 301, False) or "")


def test_first_deploy_has_nothing_to_roll_back_to():
    # (the controller halts it instead: test_serve_local's never-ready service)
    rollout = Rollout(version=1, previous=None, started_at=0, budget_seconds=10)
    replicas = fleet((1, 1, S.FAILED_INITIAL_DELAY))
    assert rollback_reason(replicas, rollout, now=100, ever_ready=False) is None


LOCS = [
    SpotLocation("aws/us-east-1/us-east-1a", 0.30),
    SpotLocation("aws/us-east-1/us-east-1b", 0.25),
    SpotLocation("aws/us-west-2/us-west-2a", 0.28),
]


def test_placer_spreads_over_the_cheapest_unused_locations():
    placer = SpotPlacer(LOCS)
    assert [loc.infra[-1] for loc in placer.spread(4)] == ["b", "a", "a", "b"]
    # 1b, 2a, 1a: then all are used, so the cheapest active again


def test_placer_avoids_preempted_locations_and_resets_below_two_active():
    placer = SpotPlacer(LOCS)
    placer.preempted("aws/us-east-1/us-east-1b")
    assert placer.select([]).infra == "aws/us-west-2/us-west-2a"
    placer.preempted("aws/us-west-2/us-west-2a")  # one left active: all reset
    assert len(placer.active()) == 3
    placer.preempted("aws/us-east-1/us-east-1b")
    placer.launched("aws/us-east-1/us-east-1b")
    assert placer.select([]).infra == "aws/us-east-1/us-east-1b"


def test_spot_replicas_go_where_the_placer_says_and_learn_from_preemptions():
    from skyform.serve.controller_base import spot_placement

    assert spot_placement(None, []) == {"use-spot": "true"}
    placer = SpotPlacer([SpotLocation("aws/us-east-1/a", 0.1), SpotLocation("aws/us-east-1/b", 0.2),
                         SpotLocation("aws/us-west-2/a", 0.3)])  # fmt: skip
    first = spot_placement(placer, [])
    second = spot_placement(placer, [first["infra"]])
    assert (first["infra"], second["infra"]) == ("aws/us-east-1/a", "aws/us-east-1/b")
    placer.preempted("aws/us-east-1/a")
    assert spot_placement(placer, [second["infra"]]) == {
        "use-spot": "true",
        "infra": "aws/us-west-2/a",
    }
