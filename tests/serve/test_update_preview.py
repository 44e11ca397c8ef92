"""The update's plan counts the replicas the controller launches: its first decision with
the new version's policy under the live traffic, on-demand fallback replicas included, and
the target handed to the controller with the update."""

from __future__ import annotations

from skyform.serve.autoscaler import Autoscaler, ReplicaView
from skyform.serve.replicas import ReplicaStatus
from skyform.serve.updates import preview_update
from skyform.spec.service_models import ReplicaPolicy

READY = ReplicaStatus.READY
RUNNING = [ReplicaView(1, 1, READY), ReplicaView(2, 1, READY)]


def updated(policy: ReplicaPolicy, qps: float) -> Autoscaler:
    scaler = Autoscaler(policy)
    scaler.updated(policy, qps)
    return scaler


def controller_launches(policy: ReplicaPolicy, qps: float, target: int) -> int:
    """What the controller's first decision after the update launches (none relabelled)."""
    scaler = Autoscaler(policy)
    scaler.updated(policy, qps, target)
    scaler.tick(qps)
    return len(scaler.decide([], 2, ready_spot=0).launch)


def test_the_live_traffic_target_is_what_the_plan_counts():
    policy = ReplicaPolicy(
        min_replicas=2, max_replicas=3, target_qps_per_replica=1.0, upscale_delay_seconds=3600
    )
    preview = preview_update("web", RUNNING, 1, 2, "rolling", updated(policy, 4.0), "changed", 4.0)
    assert preview.launch == 3 and preview.target == 3 and preview.scale_target == 3
    assert preview.count("replace") == 2
    assert preview.why_target == "the live traffic: 4.00 qps over the last 60 s"
    assert controller_launches(policy, 4.0, preview.scale_target) == preview.launch
    # the traffic gone by the time the controller takes it: still what the plan showed
    assert controller_launches(policy, 0.0, preview.scale_target) == preview.launch


def test_dynamic_on_demand_fallback_replicas_are_counted():
    policy = ReplicaPolicy(min_replicas=2, dynamic_ondemand_fallback=True)
    preview = preview_update("web", RUNNING, 1, 2, "rolling", updated(policy, 0.0), "changed")
    assert preview.launch == 4  # 2 spot, and 2 on-demand while they are not READY
    assert controller_launches(policy, 0.0, preview.scale_target) == 4


def test_relabelled_replicas_launch_nothing_and_overprovision_counts():
    policy = ReplicaPolicy(min_replicas=2, num_overprovision=1)
    preview = preview_update("web", RUNNING, 1, 2, "rolling", updated(policy, 0.0), None)
    assert preview.count("relabel") == 2 and preview.launch == 1 and preview.target == 3
    assert preview.why_target == "min_replicas 2, plus 1 overprovisioned"
