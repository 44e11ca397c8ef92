"""`serve up` with replicas on AWS through the real Pulumi engine: each replica a cluster of
its own, one stack per replica made by the real CLI with the test provider, whose instances
boot real machines; the load balancer reaches each replica at its instance's address and the
service port, a spot reclaim of one replica's instance (gone from EC2, its machine halted) is
seen by the engine's refresh and replaced by a new stack without a failed request, and
`serve down` destroys every stack, leaving the cloud empty."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "serve"))
from servekit import APP_ENV, ClientLoop, get

pytestmark = [pytest.mark.engine, pytest.mark.usefixtures("serve_tests_exclusive")]
APP = Path(__file__).parents[1] / "serve" / "plain_replica.py"
INSTANCE = "aws:ec2/instance:Instance"

SERVICE = f"""\
name: web
service:
  readiness_probe:
    path: /health
    initial_delay_seconds: 60
    timeout_seconds: 2
  replicas: 2
  ports: 8080
resources:
  infra: aws/us-east-1
  instance_type: m7a.large
  use_spot: true
workdir: {APP.parent}
run: exec /usr/bin/python3 {APP.name} 8080 "$(echo "$SKYPILOT_NODE_IPS" | head -n1)"
"""


def _record(sky) -> dict:
    return json.loads(sky("serve", "status", "web", "--json").stdout)[0]


def _wait(sky, check, timeout: float = 150) -> dict:
    deadline = time.monotonic() + timeout
    while not check(current := _record(sky)):
        if time.monotonic() > deadline:
            log = sky("serve", "logs", "web", "--no-follow", "--controller", check=None).stdout
            raise AssertionError(f"{current}\n{log[-4000:]}")
        time.sleep(0.5)
    return current


def _ready(record: dict) -> list[int]:
    return sorted(r["replica_id"] for r in record["replicas"] if r["status"] == "READY")


def _address(cloud, stack: str) -> str:
    (found,) = [
        r for r in cloud.resources(INSTANCE) if r["urn"].startswith(f"urn:pulumi:{stack}::")
    ]
    return found["outputs"]["publicIp"]


def test_replicas_on_aws_are_stacks_reached_at_their_address_and_a_reclaim_is_replaced(
    sky, test_cloud, tmp_path, monkeypatch
):
    for key, value in APP_ENV.items():
        monkeypatch.setenv(key, value)
    cloud = test_cloud.cloud
    (tmp_path / "web.yaml").write_text(SERVICE)
    sky("serve", "up", "web.yaml", "-y")
    try:
        current = _wait(sky, lambda r: _ready(r) == [1, 2])
        # both launched at once, each at the first try (no SDK half loaded by the other)
        assert "launch try" not in sky("serve", "logs", "web", "--no-follow", "--controller").stdout
        by_id = {r["replica_id"]: r for r in current["replicas"]}
        assert by_id[1]["endpoint"] == f"http://{_address(cloud, 'web-1')}:8080"
        assert by_id[2]["endpoint"] == f"http://{_address(cloud, 'web-2')}:8080"
        assert {r["role"] for r in by_id.values()} == {"spot"}
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(get, [current["endpoint"] + "/echo"] * 300))
        assert Counter(code for code, _ in results) == {200: 300}
        assert set(Counter(rid for _, rid in results)) == {"1", "2"}
        stacks = {r["urn"].split("::")[0].removeprefix("urn:pulumi:") for r in cloud.resources()}
        assert stacks == {"web-1", "web-2"}  # one stack per replica cluster

        with ClientLoop(current["endpoint"] + "/echo") as loop:
            test_cloud.terminate(INSTANCE, "node-0", stack="web-2")  # the spot reclaim
            current = _wait(sky, lambda r: _ready(r) == [1, 3])
        assert loop.failed == 0, loop.outcomes
        assert loop.outcomes[200] > 50
        third = next(r for r in current["replicas"] if r["replica_id"] == 3)
        assert third["endpoint"] == f"http://{_address(cloud, 'web-3')}:8080"
        plans = json.loads(sky("serve", "plans", "web", "--json").stdout)
        assert [p["kind"] for p in plans] == ["up", "preemption"]
        assert plans[1]["terminated"] == [2] and plans[1]["launched"] == [3]
        log = sky("serve", "logs", "web", "--no-follow", "--controller").stdout
        assert "replica 2 (aws/us-east-1" in log and "is preempted" in log
    finally:
        sky("serve", "down", "web", "-y", check=None)
    assert cloud.resources() == []  # every replica's stack destroyed
    assert test_cloud.host.machines == {}
    assert "No existing clusters" in sky("status").stdout
