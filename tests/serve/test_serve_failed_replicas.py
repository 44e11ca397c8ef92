"""A failed replica as a user sees it, on local (the CLI as its own process): `serve status`
lists it FAILED with the exit code of its process and the last lines of its log, and `serve
logs NAME ID` still prints its log once its cluster is torn down (the controller tears a
failed replica down at once, and a rollback tears down the version it undoes)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from servekit import skyform, wait_until

from skyform.serve import sandbox

pytestmark = [
    pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
    pytest.mark.usefixtures("serve_tests_exclusive"),
]

APP = Path(__file__).parent / "replica_app.py"
LAST_LINE = "fatal: weights missing at /models/llama-7b (crash-7f3a)"
TOKEN = "hf_s3cr3t-0042"  # printed by the program: redacted in the copy kept
CRASHES = f'echo "loading model as $TOKEN"; echo "{LAST_LINE}"; exit 3'


def service(name: str, run: str, version: str = "1") -> str:
    return f"""\
name: {name}
service:
  readiness_probe:
    path: /health
    initial_delay_seconds: 600
    timeout_seconds: 2
  replicas: 1
resources:
  infra: local
  ports: 8080
envs:
  APP_VERSION: "{version}"
secrets:
  TOKEN: null
run: |
  {run}
"""


def kept(record: dict, replica_id: int) -> bool:
    """Its log kept and its teardown over (SHUTTING_DOWN meanwhile, then FAILED again)."""
    replica = next(r for r in record["replicas"] if r["replica_id"] == replica_id)
    return bool(replica["log_kept"]) and replica["status"] == "FAILED"


def cluster_listed(cluster: str) -> bool:
    return cluster in skyform("status").stdout


def assert_shows_failure(name: str, replica_id: int) -> None:
    out = skyform("serve", "status", name).stdout
    assert "Failed replicas" in out, out
    assert f"{name} {replica_id} (FAILED): its process ended (FAILED with code 3)" in out, out
    assert f"| {LAST_LINE}" in out, out
    assert "| loading model as <redacted>" in out and TOKEN not in out, out
    assert f"its log: skyform serve logs {name} {replica_id}" in out, out


def assert_log_served(name: str, replica_id: int) -> None:
    cluster = f"{name}-{replica_id}"
    assert not cluster_listed(cluster)  # torn down: only the kept copy is left
    logs = skyform("serve", "logs", name, str(replica_id))
    assert LAST_LINE in logs.stdout and "loading model as <redacted>" in logs.stdout, logs
    assert TOKEN not in skyform("serve", "status", name, "--json").stdout
    assert f"its cluster {cluster} is torn down; this is its log as kept" in logs.stderr
    tail = skyform("serve", "logs", name, str(replica_id), "--tail", "1").stdout
    assert LAST_LINE in tail and "loading model" not in tail, tail
    copy = Path(os.environ["SKYFORM_HOME"]) / "serve" / name / f"replica-{replica_id}.log"
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600


def test_a_failed_replica_shows_why_and_its_log_outlives_its_cluster(tmp_path: Path):
    task = tmp_path / "crash.yaml"
    task.write_text(service("crash", CRASHES))
    skyform("serve", "up", str(task), "--secret", f"TOKEN={TOKEN}", "-y")
    try:
        record = wait_until("crash", lambda r: r["replicas"] and kept(r, 1), timeout=90)
        failed = record["replicas"][0]
        assert failed["status"] == "FAILED" and failed["exit_code"] == 3, failed
        assert failed["last_lines"][-1] == LAST_LINE, failed
        assert_shows_failure("crash", 1)
        assert_log_served("crash", 1)
    finally:
        skyform("serve", "down", "crash", "-y")


def test_the_failed_replica_of_a_rolled_back_update_keeps_its_log(tmp_path: Path):
    good = tmp_path / "web.yaml"
    good.write_text(service("undo", f"exec {sys.executable} {APP} 8080"))
    skyform("serve", "up", str(good), "--secret", f"TOKEN={TOKEN}", "-y")
    try:
        wait_until("undo", lambda r: [x["status"] for x in r["replicas"]] == ["READY"])
        bad = tmp_path / "web-bad.yaml"
        bad.write_text(service("undo", CRASHES, version="2"))
        skyform("serve", "update", "undo", str(bad), "--secret", f"TOKEN={TOKEN}", "-y")
        record = wait_until("undo", lambda r: r["rolled_back"] == [2], timeout=90)
        assert record["version"] == 1
        crashed = next(r for r in record["replicas"] if r["version"] == 2)["replica_id"]
        wait_until("undo", lambda r: kept(r, crashed), timeout=60)
        assert_shows_failure("undo", crashed)
        assert_log_served("undo", crashed)
    finally:
        skyform("serve", "down", "undo", "-y")
