"""A preempted replica (`skyform debug preempt`, the way a spot reclaim takes a node away)
is told apart from a slow one (its engine reports the node dead), replaced at once, and the
replacement is a plan revision with its reason; with 2 replicas no request fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from servekit import ClientLoop, skyform, wait_until

from skyform.serve import sandbox

pytestmark = [
    pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
    pytest.mark.usefixtures("serve_tests_exclusive"),
]

APP = Path(__file__).parent / "replica_app.py"
SERVICE = f"""\
name: spotty
service:
  readiness_probe:
    path: /health
    initial_delay_seconds: 20
    timeout_seconds: 2
  replicas: 2
resources:
  infra: local
  ports: 8080
run: exec {sys.executable} {APP} 8080
"""


def ready_ids(record: dict) -> list[int]:
    return sorted(r["replica_id"] for r in record["replicas"] if r["status"] == "READY")


def replica_ids(record: dict) -> list[int]:
    return sorted(r["replica_id"] for r in record["replicas"])


def test_one_of_two_replicas_preempted_is_replaced_and_no_request_fails(tmp_path: Path):
    task = tmp_path / "spotty.yaml"
    task.write_text(SERVICE)
    skyform("serve", "up", str(task), "-y")
    try:
        record = wait_until("spotty", lambda r: ready_ids(r) == [1, 2])
        victim = next(r for r in record["replicas"] if r["replica_id"] == 2)
        with ClientLoop(record["endpoint"] + "/echo") as loop:
            skyform("debug", "preempt", victim["cluster"])
            record = wait_until("spotty", lambda r: ready_ids(r) == [1, 3], timeout=60)
        assert loop.failed == 0, loop.outcomes
        assert loop.outcomes[200] > 50
        # the preempted replica shows PREEMPTED until its teardown ends, then leaves the list
        record = wait_until("spotty", lambda r: replica_ids(r) == [1, 3], timeout=60)
        plans = json.loads(skyform("serve", "plans", "spotty", "--json").stdout)
        preemption = [p for p in plans if p["kind"] == "preemption"]
        assert len(preemption) == 1
        assert preemption[0]["reason"].startswith("replica(s) 2 (local) preempted: replaced")
        assert preemption[0]["terminated"] == [2] and preemption[0]["launched"] == [3]
        assert [p["kind"] for p in plans] == ["up", "preemption"]
        assert {r["replica_id"] for r in preemption[0]["replicas"]} == {1, 3}
        log = skyform("serve", "logs", "spotty", "--no-follow", "--controller").stdout
        assert "replica 2 (local) is preempted: node 0 (node was preempted)" in log
    finally:
        skyform("serve", "down", "spotty", "-y")
    assert "No existing clusters" in skyform("status").stdout
