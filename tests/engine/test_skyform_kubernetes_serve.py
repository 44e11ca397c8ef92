"""`serve up` with replicas on Kubernetes through the real engine, as a user drives it: each
replica a cluster of its own (one stack per replica: a Secret, a Pod and a NodePort Service)
made by the real Pulumi CLI and Kubernetes provider against the test cluster's API server;
the load balancer reaches each replica at its pod's node and the node port of the service
port; a replica's pod deleted out of band (`kubectl delete pod`) costs no request (the LB
retries on the other replica), the controller learns from the engine's refresh that the pod
is gone and makes a new stack for a new replica, and `serve down` leaves nothing in the API."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import wait_until
from kubecluster.skyuser import KINDS, NAMESPACE

sys.path.insert(0, str(Path(__file__).parents[1] / "serve"))
from servekit import APP_ENV, ClientLoop, get

pytestmark = [pytest.mark.engine, pytest.mark.usefixtures("serve_tests_exclusive")]
APP = Path(__file__).parents[1] / "serve" / "plain_replica.py"

# the app binds the pod's address (the head's entry of SKYPILOT_NODE_IPS)
SERVICE = f"""\
name: web
service:
  readiness_probe: {{path: /health, initial_delay_seconds: 60, timeout_seconds: 2}}
  replicas: 2
  ports: 8080
resources: {{infra: k8s, cpus: 1, memory: 2}}
workdir: {APP.parent}
run: exec /usr/bin/python3 {APP.name} 8080 "$(echo "$SKYPILOT_NODE_IPS" | head -n1)"
"""


def _ready(record: dict) -> list[int]:
    return sorted(r["replica_id"] for r in record["replicas"] if r["status"] == "READY")


def _objects(user) -> dict[str, list[str]]:
    """The names of what the API holds of the replicas' clusters (`web-<id>`), per kind."""
    found = {}
    for kind in KINDS:
        items = user.cluster.rest.get(f"/api/v1/namespaces/{NAMESPACE}/{kind}")["items"]
        found[kind] = sorted(
            o["metadata"]["name"] for o in items if o["metadata"]["name"].startswith("web-")
        )
    return found


def _reached_at(user, rid: int) -> str:
    """Where the replica's pod serves port 8080: its node's address and its Service's node
    port (in the test cluster each pod is its own node)."""
    rest = user.cluster.rest
    pod = rest.get(f"/api/v1/namespaces/{NAMESPACE}/pods/web-{rid}-0")
    service = rest.get(f"/api/v1/namespaces/{NAMESPACE}/services/web-{rid}-0-ssh")
    (port,) = [p["nodePort"] for p in service["spec"]["ports"] if p["port"] == 8080]
    return f"http://{pod['status']['hostIP']}:{port}"


def test_replicas_on_kubernetes_answer_through_the_lb_and_a_deleted_pod_is_replaced(kube_user):
    user = kube_user
    env = {**user.env, **APP_ENV}

    def sky(*args, check: int | None = 0):
        return user.sky(*args, env=env, check=check)

    def controller_log() -> str:
        return sky("serve", "logs", "web", "--no-follow", "--controller").stdout

    def record() -> dict:
        return json.loads(sky("serve", "status", "web", "--json").stdout)[0]

    def wait(check, timeout: float = 180) -> dict:
        deadline = time.monotonic() + timeout
        while not check(current := record()):
            if time.monotonic() > deadline:
                log = sky("serve", "logs", "web", "--no-follow", "--controller", check=None).stdout
                raise AssertionError(f"{current}\n{log[-4000:]}")
            time.sleep(0.3)
        return current

    user.task("web.yaml", SERVICE)
    began = time.monotonic()
    sky("serve", "up", "web.yaml", "-y")
    try:
        current = wait(lambda r: _ready(r) == [1, 2])
        print(f"serve up -> 2 replicas READY on Kubernetes: {time.monotonic() - began:.1f} s")
        # both launched at once, each at the first try (no SDK module half loaded by the other)
        assert "launch try" not in controller_log()
        by_id = {r["replica_id"]: r for r in current["replicas"]}
        assert by_id[1]["endpoint"] == _reached_at(user, 1)
        assert by_id[2]["endpoint"] == _reached_at(user, 2)
        assert _objects(user) == {  # one stack per replica cluster
            "pods": ["web-1-0", "web-2-0"],
            "services": ["web-1-0-ssh", "web-2-0-ssh"],
            "secrets": ["web-1-ssh", "web-2-ssh"],
            "endpoints": ["web-1-0-ssh", "web-2-0-ssh"],
        }
        clusters = json.loads(sky("status", "--json").stdout)
        assert sorted((c["name"], c["stack"]) for c in clusters) == [
            ("web-1", "skyform/web-1"),
            ("web-2", "skyform/web-2"),
        ]
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(get, [current["endpoint"] + "/echo"] * 200))
        assert Counter(code for code, _ in results) == {200: 200}
        assert set(Counter(rid for _, rid in results)) == {"1", "2"}

        with ClientLoop(current["endpoint"] + "/echo") as loop:
            time.sleep(1)
            before = sum(loop.outcomes.values())
            deleted = time.monotonic()
            user.cluster.rest.delete(f"/api/v1/namespaces/{NAMESPACE}/pods/web-2-0")
            current = wait(lambda r: _ready(r) == [1, 3])
            replaced_in = time.monotonic() - deleted
            sent = sum(loop.outcomes.values()) - before
        print(
            f"pod deleted -> replacement READY: {replaced_in:.1f} s; requests meanwhile: "
            f"{sent} sent, {loop.failed} failed"
        )
        lb_log = sky("serve", "logs", "web", "--no-follow", "--load-balancer", check=None).stdout
        assert loop.failed == 0, (loop.outcomes, lb_log[-6000:])
        assert sent > 50
        assert _reached_at(user, 3) == next(
            r["endpoint"] for r in current["replicas"] if r["replica_id"] == 3
        )
        # the lost replica's stack is destroyed beside its replacement's launch
        wait_until(lambda: "web-2: removed stack skyform/web-2" in controller_log(), 60)
        assert _objects(user)["pods"] == ["web-1-0", "web-3-0"]
        clusters = json.loads(sky("status", "--json").stdout)
        assert sorted(c["name"] for c in clusters) == ["web-1", "web-3"]
        plans = json.loads(sky("serve", "plans", "web", "--json").stdout)
        assert [p["kind"] for p in plans] == ["up", "preemption"]
        assert plans[1]["terminated"] == [2] and plans[1]["launched"] == [3]
        log = controller_log()
        preempted = "replica 2 (kubernetes/skyform-test) is preempted: "
        # out of the LB at its first failed probe, before the engine's refresh said why
        assert 0 < log.index("replica 2: READY -> NOT_READY") < log.index(preempted)
        # the refresh found the pod gone, or still being deleted (it never runs again)
        why = log[log.index(preempted) :].splitlines()[0].removeprefix(preempted)
        assert why in ("node 0 (the pod is gone)", "node 0 (Terminating)"), why
        assert "web-2: deleted ssh-0 (kubernetes:core/v1:Service)" in log
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(get, [current["endpoint"] + "/echo"] * 100))
        assert Counter(code for code, _ in results) == {200: 100}
        assert set(Counter(rid for _, rid in results)) == {"1", "3"}
    except BaseException:
        print(sky("serve", "logs", "web", "--no-follow", "--controller", check=None).stdout[-8000:])
        raise
    finally:
        sky("serve", "down", "web", "-y", check=None)
    wait_until(lambda: not any(_objects(user).values()), 15)  # Endpoints follow their Service
    assert "No existing clusters" in sky("status").stdout
    assert user.cluster.agent.errors == []
