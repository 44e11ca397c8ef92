"""Services in a shared store: two SKYFORM_HOMEs ("alice" and "bob") on one real PostgreSQL.
A service put up from alice's home is READY in bob's `serve status`, answers through the
endpoint bob reads there, shows its plan revisions to bob, and bob takes it down (through a
request the controller answers: no signal, no socket); nothing of it is left in either home
or in the store. Bob's `serve up` of the same name is refused naming alice's home; an update
with secrets from bob's home without the team's passphrase is refused before anything
changes, and made with it (the secrets sealed: never in clear in the store); a replica bob
takes down is replaced; bob's `serve logs` says where the controller's log is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from skyform.serve import sandbox
from skyform.state.services import SERVICE_TABLES

pytestmark = [
    pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
    pytest.mark.usefixtures("serve_tests_exclusive"),
]

APP = Path(__file__).parent / "replica_app.py"

SERVICE = f"""\
name: shared-web
service:
  readiness_probe:
    path: /health
    initial_delay_seconds: 20
  replicas: 1
resources:
  infra: local
  ports: 8080
secrets:
  TOKEN: null
run: exec {sys.executable} {APP} 8080
"""

TEAM = "the-team-passphrase"


class Homes:
    def __init__(self, root: Path, url: str) -> None:
        self.url, self.root = url, root
        self.homes = {who: root / who for who in ("alice", "bob")}
        for home in self.homes.values():
            home.mkdir(mode=0o700)

    def run(self, who: str, *args: str, check: int | None = 0, **extra: str):
        env = dict(
            os.environ,
            SKYFORM_HOME=str(self.homes[who]),
            SKYFORM_STATE_URL=self.url,
            SKYFORM_SERVE_PROBE_INTERVAL="0.5",
            SKYFORM_SERVE_DECISION_INTERVAL="0.5",
            SKYFORM_SERVE_STATS_WINDOW="1",
            NO_COLOR="1",
            COLUMNS="200",
        )
        proc = subprocess.run(
            [sys.executable, "-m", "skyform.cli.main", *args],
            capture_output=True,
            text=True,
            env=env | extra,
            stdin=subprocess.DEVNULL,
            timeout=300,
            cwd=self.root,
        )
        if check is not None:
            assert proc.returncode == check, proc.stdout + proc.stderr
        return proc

    def status(self, who: str) -> list[dict]:
        return json.loads(self.run(who, "serve", "status", "--json").stdout)

    def wait(self, who: str, check, timeout: float = 90) -> dict:
        """The service's record as `who` sees it, once `check(record)` holds."""
        deadline = time.monotonic() + timeout
        while True:
            (seen,) = self.status(who)
            if check(seen):
                return seen
            assert time.monotonic() < deadline, seen
            time.sleep(0.5)


def store_text(url: str) -> str:
    """Every row of the services' tables, as text."""
    import psycopg

    with psycopg.connect(url) as conn:
        return repr([conn.execute(f"SELECT * FROM {t}").fetchall() for t in SERVICE_TABLES])


def rows_left(url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {
            table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in SERVICE_TABLES
        }


def test_a_service_up_from_one_home_is_seen_used_and_taken_down_from_another(
    tmp_path: Path, pg_url: str
):
    homes = Homes(tmp_path, pg_url)
    task = tmp_path / "web.yaml"
    task.write_text(SERVICE)
    homes.run(
        "alice", "serve", "up", str(task), "-y", "--secret", "TOKEN=s3cret-value",
        SKYFORM_PASSPHRASE=TEAM,
    )  # fmt: skip
    try:
        seen = homes.wait("bob", lambda r: r["status"] == "READY")
        with urllib.request.urlopen(f"{seen['endpoint']}/echo", timeout=10) as resp:
            assert resp.status == 200
        plans = homes.run("bob", "serve", "plans", "shared-web").stdout
        assert "up" in plans and "autoscaler" in plans

        twice = homes.run("bob", "serve", "up", str(task), "-y", "--secret", "TOKEN=x", check=1)
        assert "service 'shared-web' already exists, made by" in twice.stderr
        assert str(homes.homes["alice"].resolve()) in twice.stderr

        update = homes.run(
            "bob", "serve", "update", "shared-web", str(task), "-y", "--secret", "TOKEN=y",
            check=1,
        )  # fmt: skip
        assert "SKYFORM_PASSPHRASE" in update.stderr and "this update has secrets" in update.stderr
        assert [r["version"] for r in homes.status("alice")] == [1]
        # with the team's passphrase the secrets travel sealed, and the update is made
        homes.run(
            "bob", "serve", "update", "shared-web", str(task), "-y", "--secret",
            "TOKEN=n3w-s3cret", SKYFORM_PASSPHRASE=TEAM,
        )  # fmt: skip
        seen = homes.wait(
            "bob",
            lambda r: (
                r["version"] == 2
                and [x["version"] for x in r["replicas"] if x["status"] == "READY"] == [2]
            ),
        )
        # a replica taken down from bob's home is replaced by alice's controller
        (first,) = [x["replica_id"] for x in seen["replicas"] if x["status"] == "READY"]
        asked = time.monotonic()
        homes.run("bob", "serve", "down", "shared-web", "--replica-id", str(first), "-y")
        print(f"cross-home serve down --replica-id answered in {time.monotonic() - asked:.2f} s")
        seen = homes.wait(
            "bob",
            lambda r: any(x["status"] == "READY" and x["replica_id"] > first
                          for x in r["replicas"]),
        )  # fmt: skip
        plans = homes.run("bob", "serve", "plans", "shared-web").stdout
        assert f"terminated by serve down --replica-id {first}" in plans

        logs = homes.run("bob", "serve", "logs", "shared-web", "--controller", check=1)
        where = f"{homes.homes['alice'].resolve()}/serve/shared-web/controller.log"
        assert where in logs.stderr

        # the LB's traffic, one row per window, from the request above
        import psycopg

        deadline = time.monotonic() + 20
        while True:
            with psycopg.connect(pg_url) as conn:
                served = conn.execute(
                    "SELECT SUM(requests), MAX(p50_ms) FROM service_stats"
                ).fetchone()
            if served[0]:
                break
            assert time.monotonic() < deadline, "no traffic recorded"
            time.sleep(0.5)
        assert served[0] >= 1 and served[1] is not None and served[1] > 0
        for path in homes.homes["alice"].rglob("*"):
            if path.is_file():
                assert b"s3cret" not in path.read_bytes(), path
        assert "s3cret" not in store_text(pg_url)
    finally:
        started = time.monotonic()
        down = homes.run("bob", "serve", "down", "shared-web", "-y", check=None)
        took = time.monotonic() - started
    assert down.returncode == 0, down.stdout + down.stderr
    assert "Service shared-web is down." in down.stdout
    print(f"cross-home serve down took {took:.2f} s")
    for who in ("alice", "bob"):
        assert homes.status(who) == []
        assert not (homes.homes[who] / "serve" / "shared-web").exists()
    assert rows_left(pg_url) == dict.fromkeys(SERVICE_TABLES, 0)
    replica = seen["replicas"][0]["sandbox"]
    assert replica not in sandbox.existing()
