"""`serve down NAME --replica-id N` (SkyPilot's verb): that one replica is drained and torn
down, the controller replaces it because the service is below min_replicas, a saved plan
revision says why, and no request fails meanwhile; a replica it does not have is refused."""

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
name: trim
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


def test_down_of_one_replica_is_replaced_with_a_revision_and_no_failed_request(tmp_path: Path):
    task = tmp_path / "trim.yaml"
    task.write_text(SERVICE)
    skyform("serve", "up", str(task), "-y")
    try:
        record = wait_until("trim", lambda r: ready_ids(r) == [1, 2])
        missing = skyform("serve", "down", "trim", "--replica-id", "9", "-y", check=False)
        assert missing.returncode == 1
        assert "service 'trim': it has no replica 9" in missing.stderr
        assert "Its replicas: 1, 2." in missing.stderr
        with ClientLoop(record["endpoint"] + "/echo") as loop:
            done = skyform("serve", "down", "trim", "--replica-id", "1", "-y")
            assert "Replica 1 of service trim is shutting down" in done.stdout
            # replica 1 leaves the list once drained and torn down, which can come after
            # its replacement is READY
            record = wait_until(
                "trim",
                lambda r: ready_ids(r) == [2, 3] and len(r["replicas"]) == 2,
                timeout=60,
            )
        assert loop.failed == 0, loop.outcomes
        assert loop.outcomes[200] > 50
        assert [r["replica_id"] for r in record["replicas"]] == [2, 3]
        plans = json.loads(skyform("serve", "plans", "trim", "--json").stdout)
        assert [p["kind"] for p in plans] == ["up", "down", "scale"]
        down = plans[1]
        assert down["reason"] == "replica 1 (READY) terminated by serve down --replica-id 1"
        assert down["terminated"] == [1]
        assert {r["replica_id"] for r in down["replicas"]} == {2}
        assert plans[2]["launched"] == [3]
        assert "serve down --replica-id 1" in skyform("serve", "plans", "trim").stdout
    finally:
        skyform("serve", "down", "trim", "-y")
    assert "No existing clusters" in skyform("status").stdout
