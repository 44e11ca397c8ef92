"""A replica whose launch fails is tried again as SkyPilot does (3 tries, the gap doubling from
60 s; SKYFORM_SERVE_LAUNCH_RETRY_GAP shortens it here) before it is FAILED_PROVISION and
replaced, instead of being replaced at once, round after round."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import sandboxes_exclusive
from servekit import skyform, wait_for, wait_until

from skyform.serve import sandbox

pytestmark = pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available()))

APP = Path(__file__).parent / "replica_app.py"
GAP = 1.0

# setup stamps each try; it fails until `succeed_at` tries have been made
SERVICE = """\
name: {name}
service:
  readiness_probe: {{path: /health, initial_delay_seconds: 30}}
  replicas: 1
resources: {{infra: local, ports: 8080}}
setup: |
  echo "$SKYPILOT_SERVE_REPLICA_ID $(date +%s.%N)" >> {stamps}
  [ "$(wc -l < {stamps})" -ge {succeed_at} ]
run: exec {python} {app} 8080
"""


@pytest.fixture(autouse=True)
def short_gaps(monkeypatch):
    monkeypatch.setenv("SKYFORM_SERVE_LAUNCH_RETRY_GAP", str(GAP))
    with sandboxes_exclusive():
        yield


def _up(tmp_path: Path, name: str, succeed_at: int) -> Path:
    stamps = tmp_path / "stamps"
    task = tmp_path / f"{name}.yaml"
    task.write_text(
        SERVICE.format(
            name=name, stamps=stamps, succeed_at=succeed_at, python=sys.executable, app=APP
        )
    )
    skyform("serve", "up", str(task), "-y")
    return stamps


def _tries(stamps: Path) -> list[tuple[int, float]]:
    return [
        (int(r), float(t)) for r, t in (line.split() for line in stamps.read_text().splitlines())
    ]


def _status_of(record: dict, replica_id: int) -> str | None:
    return next((x["status"] for x in record["replicas"] if x["replica_id"] == replica_id), None)


def test_a_launch_that_fails_twice_is_tried_again_after_60s_then_120s_scaled(tmp_path):
    stamps = _up(tmp_path, "flaky", succeed_at=3)
    try:
        record = wait_for("flaky", "READY", timeout=120)
        assert [r["replica_id"] for r in record["replicas"]] == [
            1
        ]  # the same replica, not a new one
        tries = _tries(stamps)
        assert [rid for rid, _ in tries] == [1, 1, 1]
        (_, a), (_, b), (_, c) = tries
        assert b - a >= GAP and c - b >= 2 * GAP  # backoff doubles
        log = skyform("serve", "logs", "flaky", "--no-follow", "--controller").stdout
        assert "launch try 1 of 3 failed" in log and "launch try 2 of 3 failed" in log
    finally:
        skyform("serve", "down", "flaky", "-y")


def test_after_three_failed_tries_the_replica_is_failed_provision_and_replaced(tmp_path):
    stamps = _up(tmp_path, "doomed", succeed_at=99)
    try:
        # replica 2 may be launched while replica 1 is still torn down (SHUTTING_DOWN, as in
        # SkyPilot); the record that stays afterwards is what tells the user why it went
        record = wait_until(
            "doomed",
            lambda r: (
                any(x["replica_id"] == 2 for x in r["replicas"])
                and _status_of(r, 1) != "SHUTTING_DOWN"
            ),
            timeout=120,
        )
        first = next(x for x in record["replicas"] if x["replica_id"] == 1)
        assert first["status"] == "FAILED_PROVISION"
        assert [rid for rid, _ in _tries(stamps)].count(1) == 3
    finally:
        skyform("serve", "down", "doomed", "-y")
    assert json.loads(skyform("status", "--json").stdout) == []
