"""`serve up` with replicas on a cloud: each replica a planned placement applied through the
same plan/apply path as `launch`, one Pulumi stack per replica cluster.

The Pulumi CLI cannot be installed here, so the recording stand-in `pulumi` is first on PATH
(as in test_pulumi_apply.py): the Automation API drives it exactly as it drives the real CLI,
and each replica stack's `up` answers with outputs that point at a real sshd node of its own
on loopback. The rest is real: skyform's key, setup, the replica's job, probes, the load
balancer reaching the replica at the stack's address and the service port, a spot
preemption seen by `pulumi refresh` (the instance is gone) and replaced on a new stack,
`serve down` destroying every stack.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from e2ekit import task_file

sys.path.insert(0, str(Path(__file__).parents[1] / "serve"))
from servekit import APP_ENV, ClientLoop, get

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("serve_tests_exclusive")]
APP = Path(__file__).parents[1] / "serve" / "plain_replica.py"


INSTANCE = "aws:ec2/instance:Instance"


def trust_skyform_key(home: Path, nodes) -> None:
    """Cloud nodes trust skyform's own key pair: give it the test nodes' key."""
    keys = home / "keys"
    keys.mkdir(mode=0o700)
    shutil.copy(nodes.key, keys / "skyform-key")
    shutil.copy(f"{nodes.key}.pub", keys / "skyform-key.pub")
    os.chmod(keys / "skyform-key", 0o600)


def stack_of(node, *, node_ports: dict[str, int] | None = None, type_: str = INSTANCE) -> dict:
    out: dict = {"rank": 0, "id": f"i-{node.port}", "public_ip": node.host,
                 "private_ip": node.host, "port": node.port}  # fmt: skip
    if node_ports is not None:
        out["node_ports"] = node_ports
    alive = {"instanceState": "running"} if type_ == INSTANCE else {"status": {"phase": "Running"}}
    return {
        "outputs": {"ssh_user": node.user, "nodes": [out]},
        "resources": [{"type": type_, "name": "node-0", "outputs": alive}],
    }


class Service:
    def __init__(self, sky, name: str) -> None:
        self.sky, self.name = sky, name

    def record(self) -> dict:
        return json.loads(self.sky("serve", "status", self.name, "--json", check=0).stdout)[0]

    def wait(self, check, timeout: float = 150) -> dict:
        deadline = time.monotonic() + timeout
        while not check(current := self.record()):
            if time.monotonic() > deadline:
                log = self.sky("serve", "logs", self.name, "--controller", check=0).stdout
                raise AssertionError(f"{current}\n{log[-4000:]}")
            time.sleep(0.5)
        return current


def ready(record: dict) -> list[int]:
    return sorted(r["replica_id"] for r in record["replicas"] if r["status"] == "READY")


AWS_SERVICE = f"""\
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


def test_replicas_on_aws_are_stacks_reached_at_their_address_and_a_preemption_is_replaced(
    sky, skyform_home, make_ssh_nodes, tmp_path, pulumi_standin, monkeypatch
):
    for key, value in APP_ENV.items():
        monkeypatch.setenv(key, value)
    nodes = make_ssh_nodes(3)
    trust_skyform_key(skyform_home, nodes)
    scenario_file = pulumi_standin / "standin-scenario.json"
    stacks = {f"web-{i + 1}": stack_of(nodes.handle(i)) for i in range(3)}
    scenario_file.write_text(json.dumps({"stacks": stacks}))
    task = task_file(tmp_path, "web.yaml", AWS_SERVICE)
    service = Service(sky, "web")

    up = sky("serve", "up", task, "-y", timeout=180)
    assert up.exit_code == 0, up.output
    try:
        current = service.wait(lambda r: ready(r) == [1, 2])
        by_id = {r["replica_id"]: r for r in current["replicas"]}
        assert by_id[1]["endpoint"] == f"http://{nodes.handle(0).host}:8080"
        assert by_id[2]["endpoint"] == f"http://{nodes.handle(1).host}:8080"
        assert {r["infra"].split("/")[:2] == ["aws", "us-east-1"] for r in by_id.values()} == {True}
        assert {r["role"] for r in by_id.values()} == {"spot"}
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(get, [current["endpoint"] + "/echo"] * 300))
        assert Counter(code for code, _ in results) == {200: 300}
        assert set(Counter(rid for _, rid in results)) == {"1", "2"}
        state = json.loads((pulumi_standin / "standin-state.json").read_text())["stacks"]
        assert sorted(state) == ["web-1", "web-2"]  # one stack per replica cluster

        # AWS reclaims replica 2's spot instance: the node dies, and a refresh no longer
        # finds the instance
        stacks["web-2"]["refresh"] = []
        scenario_file.write_text(json.dumps({"stacks": stacks}))
        with ClientLoop(current["endpoint"] + "/echo") as loop:
            nodes.kill_node(1)
            current = service.wait(lambda r: ready(r) == [1, 3])
        assert loop.failed == 0, loop.outcomes
        assert loop.outcomes[200] > 50
        third = next(r for r in current["replicas"] if r["replica_id"] == 3)
        assert third["endpoint"] == f"http://{nodes.handle(2).host}:8080"
        plans = json.loads(sky("serve", "plans", "web", "--json", check=0).stdout)
        assert [p["kind"] for p in plans] == ["up", "preemption"]
        assert plans[1]["terminated"] == [2] and plans[1]["launched"] == [3]
        log = sky("serve", "logs", "web", "--controller", check=0).stdout
        assert "replica 2 (aws/us-east-1" in log and "is preempted" in log
    finally:
        down = sky("serve", "down", "web", "-y", timeout=300)
    assert down.exit_code == 0, down.output
    state = json.loads((pulumi_standin / "standin-state.json").read_text())["stacks"]
    assert state == {}  # every replica's stack destroyed and removed
    assert "No existing clusters" in sky("status", check=0).stdout
