"""`serve up` on an ssh node pool of real sshd nodes: each replica on a host of its own,
reached at that host's address, READY through its probes, 500 requests all 200 through the
endpoint; a preempted host's replica is replaced on another host with no failed request;
`serve down` gives every host back."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from e2ekit import task_file, two_region_pool

sys.path.insert(0, str(Path(__file__).parents[1] / "serve"))
from servekit import APP_ENV, ClientLoop, get

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("serve_tests_exclusive")]
# the nodes are other Unix users: a standard-library replica on the system python
APP = Path(__file__).parents[1] / "serve" / "plain_replica.py"


SERVICE = f"""\
name: pooled
service:
  readiness_probe:
    path: /health
    initial_delay_seconds: 30
    timeout_seconds: 2
  replica_policy:
    min_replicas: 2
    spot_placer: dynamic_fallback
resources:
  infra: ssh/lab
  use_spot: true
  ports: 8080
workdir: {APP.parent}
run: exec /usr/bin/python3 {APP.name} 8080 "$(echo "$SKYPILOT_NODE_IPS" | head -n1)"
"""


def test_serve_on_an_ssh_pool_replicas_preemption_and_down(
    sky, skyform_home, fresh_ssh_nodes, tmp_path, monkeypatch
):
    for key, value in APP_ENV.items():
        monkeypatch.setenv(key, value)
    two_region_pool(skyform_home, fresh_ssh_nodes)
    task = task_file(tmp_path, "pooled.yaml", SERVICE)

    def record() -> dict:
        return json.loads(sky("serve", "status", "pooled", "--json", check=0).stdout)[0]

    def wait(check, timeout: float = 90) -> dict:
        deadline = time.monotonic() + timeout
        while not check(current := record()):
            if time.monotonic() > deadline:
                log = sky("serve", "logs", "pooled", "--no-follow", "--controller", check=0).stdout
                raise AssertionError(f"{current}\n{log[-3000:]}")
            time.sleep(0.5)
        return current

    def ready(r: dict) -> list[int]:
        return sorted(x["replica_id"] for x in r["replicas"] if x["status"] == "READY")

    sky("serve", "up", task, "-y", check=0)
    try:
        current = wait(lambda r: ready(r) == [1, 2])
        hosts = {x["endpoint"] for x in current["replicas"]}
        assert len(hosts) == 2 and all(h.startswith("http://127.0.100.") for h in hosts)
        assert {x["infra"].split("/")[0] for x in current["replicas"]} == {"ssh"}
        assert {x["role"] for x in current["replicas"]} == {"spot"}
        assert "[spot]" in sky("serve", "status", "pooled", check=0).stdout
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(get, [current["endpoint"] + "/echo"] * 500))
        assert Counter(code for code, _ in results) == {200: 500}
        assert set(Counter(rid for _, rid in results)) == {"1", "2"}

        victim = next(x for x in current["replicas"] if x["replica_id"] == 2)
        with ClientLoop(current["endpoint"] + "/echo") as loop:
            sky("debug", "preempt", victim["cluster"], check=0)
            current = wait(lambda r: ready(r) == [1, 3], timeout=120)
        assert loop.failed == 0, loop.outcomes
        third = next(x for x in current["replicas"] if x["replica_id"] == 3)
        assert third["endpoint"] not in hosts - {victim["endpoint"]}
        plans = json.loads(sky("serve", "plans", "pooled", "--json", check=0).stdout)
        assert [p["kind"] for p in plans] == ["up", "preemption"]
    finally:
        sky("serve", "down", "pooled", "-y", timeout=300)
    assert "No existing clusters" in sky("status", check=0).stdout
