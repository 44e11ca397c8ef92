"""`serve up/status/logs/down` on local as a user runs them (the CLI as its own process): two
replicas that both bind port 8080 (each in its own network namespace), READY within the
probe settings, 1,000 requests through the endpoint all 200; down leaves nothing behind."""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from servekit import get, skyform, wait_for, wait_until

from skyform.serve import sandbox
from skyform.state.leases import pid_alive

pytestmark = [
    pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
    pytest.mark.usefixtures("serve_tests_exclusive"),
]


APP = Path(__file__).parent / "replica_app.py"

SERVICE = f"""\
name: web
service:
  readiness_probe:
    path: /health
    initial_delay_seconds: 20
    timeout_seconds: 2
  replicas: 2
resources:
  infra: local
  ports: 8080
envs:
  GREETING: hi
secrets:
  TOKEN: null
run: exec {sys.executable} {APP} 8080
"""

BROKEN = f"""\
name: broken
service:
  readiness_probe:
    path: /status/503
    initial_delay_seconds: 1
  replicas: 1
resources:
  infra: local
  ports: 8080
run: exec {sys.executable} {APP} 8080
"""


def test_serve_up_two_replicas_1000_requests_then_down(tmp_path: Path, skyform_home: Path):
    task = tmp_path / "web.yaml"
    task.write_text(SERVICE)
    started = time.monotonic()
    up = skyform("serve", "up", str(task), "-y", "--secret", "TOKEN=s3cret-value")
    assert "Service name: web" in up.stdout
    endpoint = skyform("serve", "status", "web", "--endpoint").stdout.strip()
    assert endpoint.startswith("http://127.0.0.1:300")
    try:
        record = wait_for("web", "READY")
        # READY in `serve status` means the load balancer already routes to that replica
        assert get(f"{endpoint}/echo")[0] == 200
        while sum(r["status"] == "READY" for r in record["replicas"]) < 2:
            record = json.loads(skyform("serve", "status", "web", "--json").stdout)[0]
        assert time.monotonic() - started < 20  # within initial_delay_seconds
        addresses = {r["endpoint"] for r in record["replicas"]}
        assert len(addresses) == 2 and all(a.endswith(":8080") for a in addresses)

        with ThreadPoolExecutor(10) as pool:
            results = list(pool.map(get, [f"{endpoint}/echo"] * 1000))
        assert Counter(code for code, _ in results) == {200: 1000}
        assert set(Counter(rid for _, rid in results)) == {"1", "2"}

        table = skyform("serve", "status").stdout
        assert "web   1        " in table and "READY   2/2" in table
        assert "Service Replicas" in table and "10.213." in table
        assert "READY" in skyform("serve", "logs", "web", "--no-follow", "--controller").stdout
        twice = skyform("serve", "up", str(task), "-y", "--secret", "TOKEN=x", check=False)
        assert twice.returncode == 1 and "service 'web' is already running" in twice.stderr
        for path in (skyform_home / "serve").rglob("*"):
            if path.is_file():
                assert b"s3cret-value" not in path.read_bytes(), path
    finally:
        down = skyform("serve", "down", "web", "-y")
    assert "Service web is down." in down.stdout
    assert "No existing services." in skyform("serve", "status").stdout
    assert "No existing clusters" in skyform("status").stdout
    used = {r["sandbox"] for r in record["replicas"]}
    assert len(used) == 2 and not sandbox.existing() & used


def test_a_version_that_never_becomes_ready_is_failed_and_not_relaunched(tmp_path: Path):
    task = tmp_path / "broken.yaml"
    task.write_text(BROKEN)
    skyform("serve", "up", str(task), "-y")
    try:
        record = wait_for("broken", "FAILED", timeout=90)
        assert [r["status"] for r in record["replicas"]] == ["FAILED_INITIAL_DELAY"]
        time.sleep(2)
        again = json.loads(skyform("serve", "status", "broken", "--json").stdout)[0]
        assert [r["replica_id"] for r in again["replicas"]] == [1]  # halted: no relaunch loop
        assert (
            "never became READY"
            in skyform("serve", "logs", "broken", "--no-follow", "--controller").stdout
        )
    finally:
        skyform("serve", "down", "broken", "-y")


def test_down_of_an_unknown_service_and_up_on_gcp_without_the_pulumi_cli(tmp_path: Path):
    result = skyform("serve", "down", "nope", "-y", check=False)
    assert result.returncode == 1 and "no service named 'nope'" in result.stderr
    task = tmp_path / "cloud.yaml"
    task.write_text(SERVICE.replace("infra: local", "infra: gcp"))
    result = skyform("serve", "up", str(task), "-y", "--secret", "TOKEN=x", check=False)
    assert result.returncode == 1
    assert "replicas on gcp are Pulumi stacks, and the pulumi CLI is not on PATH" in (result.stderr)
    assert "No existing services." in skyform("serve", "status").stdout


def test_a_killed_controller_is_controller_failed_and_purge_cleans_up(tmp_path: Path):
    task = tmp_path / "web.yaml"
    task.write_text(SERVICE.replace("name: web", "name: orphan"))
    up = skyform("serve", "up", str(task), "-y", "--secret", "TOKEN=x")
    assert "No controller service runs: started a local controller (pid " in up.stderr
    try:
        record = wait_for("orphan", "READY")
        os.kill(record["controller_pid"], 9)
        record = wait_for("orphan", "CONTROLLER_FAILED", timeout=10)
        time.sleep(1.5)
        # the load balancer outlives its controller: it serves on, for a controller to adopt
        assert get(f"{record['endpoint']}/echo")[0] == 200
        refused = skyform("serve", "down", "orphan", "-y", check=False)
        assert refused.returncode == 1 and "--purge" in refused.stderr
    finally:
        skyform("serve", "down", "orphan", "-y", "--purge")
    assert "No existing clusters" in skyform("status").stdout
    assert not pid_alive(record["lb_pid"])  # purge stopped the load balancer too
    assert not sandbox.existing() & {r["sandbox"] for r in record["replicas"]}


def test_scaled_to_zero_the_first_request_wakes_a_replica(tmp_path: Path):
    # SkyPilot #3359: a service at zero replicas must wake on traffic
    task = tmp_path / "lazy.yaml"
    task.write_text(
        SERVICE.replace("name: web", "name: lazy").replace(
            "  replicas: 2\n",
            "  replica_policy:\n    min_replicas: 0\n    max_replicas: 1\n"
            "    target_qps_per_replica: 10\n",
        )
    )
    skyform("serve", "up", str(task), "-y", "--secret", "TOKEN=x")
    try:
        record = wait_for("lazy", "NO_REPLICA")
        time.sleep(1)
        assert json.loads(skyform("serve", "status", "lazy", "--json").stdout)[0]["replicas"] == []
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(record["endpoint"] + "/echo", timeout=5)
        assert caught.value.code == 503  # nothing READY yet, but the request is counted
        woke = time.monotonic()
        wait_for("lazy", "READY", timeout=30)
        assert time.monotonic() - woke < 15
        assert get(record["endpoint"] + "/echo") == (200, "1")
    finally:
        skyform("serve", "down", "lazy", "-y")


EXITS = """\
name: exits
service:
  readiness_probe:
    path: /
    initial_delay_seconds: 600
  replicas: 1
resources:
  infra: local
  ports: 8080
run: echo starting; exit 3
"""


def test_a_replica_whose_process_exits_is_failed_at_once(tmp_path: Path):
    """Not FAILED_INITIAL_DELAY ten minutes later: the job's exit is read from its nodes."""
    task = tmp_path / "exits.yaml"
    task.write_text(EXITS)
    skyform("serve", "up", str(task), "-y")
    try:
        record = wait_until(
            "exits",
            lambda r: any(x["status"].startswith("FAILED") for x in r["replicas"]),
            timeout=60,
        )
        failed = record["replicas"][0]
        assert failed["status"] == "FAILED", failed
        assert "its process ended (FAILED with code 3)" in failed.get("reason", ""), failed
    finally:
        skyform("serve", "down", "exits", "-y")
