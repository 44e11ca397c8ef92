"""`serve update` on local as a user runs it, with a client loop on the endpoint throughout:
a rolling update to a changed task (new replicas, zero failed requests), an update of the
service section only (replicas relabelled in place), a version that never becomes READY
(rolled back by itself, the old replicas serving all along), and a blue-green switch. Every
step is a plan revision (`serve plans`)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from servekit import ClientLoop, record_of, skyform, wait_until

from skyform.serve import sandbox

pytestmark = [
    pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
    pytest.mark.usefixtures("serve_tests_exclusive"),
]

APP = Path(__file__).parent / "replica_app.py"


def service(
    name: str, version: str, *, probe: str = "/health", delay: int = 20, policy: str = "replicas: 2"
) -> str:
    return f"""\
name: {name}
service:
  readiness_probe:
    path: {probe}
    initial_delay_seconds: {delay}
    timeout_seconds: 2
  {policy}
resources:
  infra: local
  ports: 8080
envs:
  APP_VERSION: "{version}"
run: exec {sys.executable} {APP} 8080
"""


def ready_versions(record: dict) -> list[int]:
    return sorted(r["version"] for r in record["replicas"] if r["status"] == "READY")


def test_rolling_update_relabel_and_rollback_fail_no_request(tmp_path: Path):
    task = tmp_path / "web.yaml"
    task.write_text(service("roll", "1"))
    skyform("serve", "up", str(task), "-y")
    try:
        record = wait_until("roll", lambda r: ready_versions(r) == [1, 1])
        first_ids = sorted(r["replica_id"] for r in record["replicas"])
        endpoint = record["endpoint"] + "/echo"

        # 1. a changed task: new replicas, each old one drains once a new one is READY
        v2 = tmp_path / "web-v2.yaml"
        v2.write_text(service("roll", "2"))
        with ClientLoop(endpoint) as rolling:
            time.sleep(1)
            out = skyform("serve", "update", "roll", str(v2), "-y").stdout
            assert "Update roll: version 1 -> 2 (rolling)" in out
            assert "Update: 0 to relabel, 2 to replace, 2 to launch, 0 to remove." in out
            record = wait_until(
                "roll",
                lambda r: (
                    [x["version"] for x in r["replicas"]] == [2, 2] and ready_versions(r) == [2, 2]
                ),
            )
            time.sleep(1)
        assert rolling.failed == 0, rolling.outcomes
        assert set(rolling.versions) == {"1", "2"} and rolling.outcomes[200] > 100
        second_ids = sorted(r["replica_id"] for r in record["replicas"])
        assert not set(second_ids) & set(first_ids)

        # 2. only the service section changed: the same replicas, relabelled
        v3 = tmp_path / "web-v3.yaml"
        v3.write_text(service("roll", "2", delay=30))
        out = skyform("serve", "update", "roll", str(v3), "-y").stdout
        assert "Update: 2 to relabel, 0 to replace, 0 to launch, 0 to remove." in out
        record = wait_until("roll", lambda r: ready_versions(r) == [3, 3])
        assert sorted(r["replica_id"] for r in record["replicas"]) == second_ids

        # 3. a version whose probe never passes: rolled back, version 3 serving throughout
        bad = tmp_path / "web-bad.yaml"
        bad.write_text(service("roll", "4", probe="/status/503", delay=2))
        with ClientLoop(endpoint) as during:
            skyform("serve", "update", "roll", str(bad), "-y")
            record = wait_until("roll", lambda r: r["rolled_back"] == [4], timeout=60)
            assert record["version"] == 3 and "rolled back to version 3" in record["reason"]
            record = wait_until(
                "roll",
                lambda r: (
                    [x["version"] for x in r["replicas"] if x["status"] == "READY"] == [3, 3]
                    and all(x["status"] != "SHUTTING_DOWN" for x in r["replicas"])
                ),
            )
        assert during.failed == 0, during.outcomes
        assert set(during.versions) == {"2"}  # v3 runs the v2 task (APP_VERSION 2)
        serving = [r for r in record["replicas"] if r["version"] == 3]
        assert sorted(r["replica_id"] for r in serving) == second_ids
        # the replica that made the update roll back stays listed, with why (SkyPilot keeps it)
        failed = [r for r in record["replicas"] if r["version"] == 4]
        assert failed, record["replicas"]
        assert {r["status"] for r in failed} == {"FAILED_INITIAL_DELAY"}, failed

        plans = json.loads(skyform("serve", "plans", "roll", "--json").stdout)
        kinds = [p["kind"] for p in plans]
        assert kinds[0] == "up" and "rollback" in kinds and kinds.count("update") >= 3
        assert [p["revision"] for p in plans] == list(range(1, len(plans) + 1))
        rollback = next(p for p in plans if p["kind"] == "rollback")
        assert rollback["version"] == 3 and "never became READY" in rollback["reason"]
        table = skyform("serve", "plans", "roll").stdout
        assert "REV" in table and "rollback" in table
        assert "3" in skyform("serve", "status", "roll").stdout
    finally:
        skyform("serve", "down", "roll", "-y")


def test_blue_green_switches_when_every_new_replica_is_ready(tmp_path: Path):
    task = tmp_path / "bg.yaml"
    task.write_text(service("bg", "1"))
    skyform("serve", "up", str(task), "-y")
    try:
        record = wait_until("bg", lambda r: ready_versions(r) == [1, 1])
        v2 = tmp_path / "bg-v2.yaml"
        v2.write_text(service("bg", "2"))
        with ClientLoop(record["endpoint"] + "/echo") as loop:
            skyform("serve", "update", "bg", str(v2), "--mode", "BLUE_GREEN", "-y")
            # until both new replicas are READY, only version 1 is routed
            seen = []
            while True:
                record = record_of("bg")
                seen.append((ready_versions(record), record["active_versions"]))
                if record["active_versions"] == [2]:
                    break
                assert len(seen) < 300, seen[-1]
                time.sleep(0.2)
            assert all(active == [1] for ready, active in seen[:-1] if ready.count(2) < 2)
            assert ready_versions(record).count(2) == 2
            wait_until("bg", lambda r: [x["version"] for x in r["replicas"]] == [2, 2])
            time.sleep(1)
        assert loop.failed == 0, loop.outcomes
        assert loop.versions["1"] > 0 and loop.versions["2"] > 0
    finally:
        skyform("serve", "down", "bg", "-y")
    assert not record_of_missing("bg")


def record_of_missing(name: str) -> bool:
    return name in skyform("serve", "status").stdout


# min 2, max 3 at 1 qps a replica; an hour's hysteresis, so the running service stays at 2
# under traffic until an update recomputes its target
AUTOSCALED = """replica_policy:
    min_replicas: 2
    max_replicas: 3
    target_qps_per_replica: 1
    upscale_delay_seconds: 3600
    downscale_delay_seconds: 3600"""


def test_an_update_launches_the_replicas_its_plan_showed(tmp_path: Path):
    """The update's plan counts the replicas the new version's autoscaler wants under the
    live traffic (SkyPilot recomputes the target on an update), not its min_replicas: a
    user saw "2 to launch" and 3 launched."""
    task = tmp_path / "auto.yaml"
    task.write_text(service("auto", "1", policy=AUTOSCALED))
    skyform("serve", "up", str(task), "-y")
    try:
        record = wait_until("auto", lambda r: ready_versions(r) == [1, 1])
        with ClientLoop(record["endpoint"] + "/echo", clients=2) as traffic:
            time.sleep(4)  # well over 3 qps in the autoscaler's 60 s window
        assert traffic.outcomes[200] > 200, traffic.outcomes
        assert ready_versions(record_of("auto")) == [1, 1]  # the hysteresis holds it at 2
        v2 = tmp_path / "auto-v2.yaml"
        v2.write_text(service("auto", "2", policy=AUTOSCALED))
        out = skyform("serve", "update", "auto", str(v2), "-y").stdout
        shown = int(out.split("Update: 0 to relabel, ")[1].split(" to launch")[0].split()[-1])
        wait_until(
            "auto",
            lambda r: (
                {x["version"] for x in r["replicas"]} == {2}
                and all(x["status"] == "READY" for x in r["replicas"])
            ),
            timeout=120,
        )
        plans = json.loads(skyform("serve", "plans", "auto", "--json").stdout)
        update = next(i for i, p in enumerate(plans) if p["kind"] == "update")
        launched = [rid for p in plans[update:] for rid in p["launched"]]
        assert len(launched) == shown, (out, plans[update:])
        assert shown == 3, out  # the live traffic's target, max_replicas here
    finally:
        skyform("serve", "down", "auto", "-y")
