"""The QPS autoscaler: SkyPilot's target, hysteresis in ticks, scale to zero and waking up,
on-demand fallback arithmetic and which replicas go first."""

from __future__ import annotations

import pytest

from skyform.serve.autoscaler import (
    Autoscaler,
    ReplicaView,
    fallback_targets,
    scale_down_order,
    window_qps,
)
from skyform.serve.replicas import ReplicaStatus
from skyform.spec.service_models import ReplicaPolicy

S = ReplicaStatus


def policy(**kw) -> ReplicaPolicy:
    base = {"min_replicas": 1, "max_replicas": 4, "target_qps_per_replica": 2.0}
    return ReplicaPolicy(**{**base, **kw})


def test_qps_is_the_last_60_seconds_of_the_request_log():
    counts = [(100, 30), (150, 60), (159, 30), (161, 999)]
    assert window_qps(counts, now=160) == pytest.approx(120 / 60)
    assert window_qps([], now=160) == 0


@pytest.mark.parametrize(("qps", "wanted"), [(0, 1), (0.5, 1), (2, 1), (2.01, 2), (6, 3), (100, 4)])
def test_wanted_is_ceil_of_qps_over_target_clipped(qps: float, wanted: int):
    assert Autoscaler(policy()).wanted(qps) == wanted


def test_fixed_replicas_ignore_traffic():
    scaler = Autoscaler(ReplicaPolicy(min_replicas=2))
    assert [scaler.tick(q) for q in (0, 50, 500)] == [2, 2, 2]


def test_upscale_waits_upscale_delay_in_ticks_and_a_calm_tick_resets_it():
    scaler = Autoscaler(policy(upscale_delay_seconds=60))  # 3 ticks of 20 s
    assert scaler.up_threshold == 3
    assert [scaler.tick(6) for _ in range(2)] == [1, 1]
    assert scaler.tick(1) == 1  # wants what it has: counters reset
    assert [scaler.tick(6) for _ in range(3)] == [1, 1, 3]


def test_downscale_waits_downscale_delay():
    scaler = Autoscaler(policy(upscale_delay_seconds=0, downscale_delay_seconds=100))
    assert scaler.tick(8) == 4
    assert [scaler.tick(1) for _ in range(5)] == [4, 4, 4, 4, 1]


def test_scale_to_zero_after_the_delay_and_wake_at_once_on_one_request():
    scaler = Autoscaler(policy(min_replicas=0, downscale_delay_seconds=40))
    assert scaler.target == 0 and scaler.final_target == 0
    assert scaler.next_interval() == 5  # checks often while at zero
    assert scaler.tick(1 / 60) == 1  # one request in the window: up with no delay
    assert scaler.next_interval() == 20
    assert [scaler.tick(0) for _ in range(2)] == [1, 0]


def test_traffic_always_keeps_one_replica_even_after_an_update_to_min_zero():
    # SkyPilot #3359: an update to min_replicas 0 under constant traffic went to zero
    scaler = Autoscaler(policy(min_replicas=1))
    scaler.updated(policy(min_replicas=0), qps=0.2)
    assert scaler.target == 1
    assert all(scaler.tick(0.2) == 1 for _ in range(200))


def test_an_update_applies_the_new_policy_without_hysteresis():
    scaler = Autoscaler(policy())
    scaler.tick(7)
    scaler.updated(policy(min_replicas=2, max_replicas=8, target_qps_per_replica=1.0), qps=7)
    assert scaler.target == 7 and scaler.up_ticks == scaler.down_ticks == 0


def test_overprovision_is_added_to_a_nonzero_target_only():
    scaler = Autoscaler(policy(min_replicas=0, num_overprovision=2, upscale_delay_seconds=0))
    assert scaler.final_target == 0
    scaler.tick(3)
    assert scaler.final_target == 4


def views(*specs: tuple[int, S, bool]) -> list[ReplicaView]:
    return [ReplicaView(rid, 1, status, is_spot=spot) for rid, status, spot in specs]


def test_decide_launches_the_missing_and_terminates_the_least_useful():
    scaler = Autoscaler(ReplicaPolicy(min_replicas=3))
    up = scaler.decide(views((1, S.READY, False)), version=1, ready_spot=0)
    assert len(up.launch) == 2 and up.terminate == ()
    scaler = Autoscaler(ReplicaPolicy(min_replicas=1))
    live = views((1, S.READY, False), (2, S.STARTING, False), (3, S.READY, False))
    down = scaler.decide([*live, *views((4, S.FAILED, False))], version=1, ready_spot=0)
    assert down.terminate == (2, 3)  # STARTING first, then the newest READY
    assert down.launch == ()


def test_scale_down_order_status_then_oldest_version_then_highest_id():
    replicas = [
        ReplicaView(1, 2, S.READY),
        ReplicaView(2, 1, S.READY),
        ReplicaView(3, 1, S.READY),
        ReplicaView(4, 2, S.PROVISIONING),
        ReplicaView(5, 2, S.NOT_READY),
    ]
    assert [r.replica_id for r in scale_down_order(replicas)] == [4, 5, 3, 2, 1]


@pytest.mark.parametrize(
    ("base", "dynamic", "final", "target", "ready_spot", "expected"),
    [
        (1, False, 3, 3, 0, (2, 1)),  # static mixture
        (0, True, 3, 3, 0, (3, 3)),  # nothing spot is READY: on-demand covers all
        (0, True, 3, 3, 2, (3, 1)),
        (0, True, 3, 3, 3, (3, 0)),  # spot all READY: on-demand scaled away
        (1, True, 4, 3, 1, (3, 3)),  # capped at the target without overprovisioning
        (2, False, 1, 1, 0, (0, 1)),
    ],
)
def test_ondemand_fallback_targets(base, dynamic, final, target, ready_spot, expected):
    p = ReplicaPolicy(
        min_replicas=1, base_ondemand_fallback_replicas=base, dynamic_ondemand_fallback=dynamic
    )
    assert fallback_targets(p, final, target, ready_spot) == expected


def test_fallback_decisions_launch_spot_and_ondemand_separately():
    scaler = Autoscaler(ReplicaPolicy(min_replicas=2, dynamic_ondemand_fallback=True))
    first = scaler.decide([], version=1, ready_spot=0)
    assert sorted(str(x.use_spot) for x in first.launch) == ["False", "False", "True", "True"]
    later = scaler.decide(
        views((1, S.READY, True), (2, S.READY, True), (3, S.READY, False), (4, S.READY, False)),
        version=1,
        ready_spot=2,
    )
    assert later.terminate == (4, 3) and later.launch == ()


def test_instance_aware_target_counts_capacities():
    p = policy(min_replicas=1, max_replicas=10, target_qps_per_replica={"A100": 10.0, "L4": 2.0})
    scaler = Autoscaler(p)
    a100 = ReplicaView(1, 1, S.READY, accelerator="A100")
    l4 = ReplicaView(2, 1, S.READY, accelerator="L4")
    assert scaler.wanted(11, [a100, l4]) == 2  # 12 capacity covers 11
    assert scaler.wanted(25, [a100, l4]) == 4  # 13 more at the largest capacity: 2 more
    assert scaler.wanted(5, [a100, l4]) == 1  # the A100 alone covers it
