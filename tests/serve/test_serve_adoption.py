"""A service driven by `skyform controller run` survives `kill -9` of its controller: five
rounds in a row, alternately the service's own controller process and the `controller run`
service driving it are killed while 8 keep-alive clients send requests through the load
balancer. Another controller adopts the service within the lease time (3 s here), keeps the
load balancer and the READY replicas (no relaunch) and pushes its replica set; no request
fails beyond one retried on a fresh connection. The adopter then updates (scales) the service
and takes it down, leaving no process behind. The adoption times and request counts are
printed (pytest -s) for the closing note."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from servekit import APP_ENV, Clients, get, skyform, wait_until

from skyform.serve import sandbox
from skyform.state.db import open_state
from skyform.state.leases import pid_alive

pytestmark = [
    pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
    pytest.mark.usefixtures("serve_tests_exclusive"),
]

APP = Path(__file__).parent / "replica_app.py"
LEASE_TTL = 3.0
ROUNDS = 5


def service_yaml(replicas: int) -> str:
    return f"""\
name: web
service:
  readiness_probe:
    path: /health
    initial_delay_seconds: 20
  replicas: {replicas}
resources:
  infra: local
  ports: 8080
run: exec {sys.executable} {APP} 8080
"""


class KeepAliveClients(Clients):
    """`n` threads, each on one keep-alive connection, sending GET /echo back to back. A
    request whose connection broke is sent once more on a new connection (`retried`); it
    fails if that fails too, or if any answer is not 200."""

    def __init__(self, endpoint: str, n: int = 8) -> None:
        url = urlsplit(endpoint)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 80
        self.sent = self.failed = self.retried = 0
        self.errors: list[str] = []
        super().__init__(n)

    def _once(self, conn: http.client.HTTPConnection) -> int:
        conn.request("GET", "/echo")
        resp = conn.getresponse()
        resp.read()
        return resp.status

    def _run(self) -> None:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        while not self._stop.is_set():
            retried, error = False, None
            try:
                status = self._once(conn)
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                retried = True
                try:
                    status = self._once(conn)
                except (OSError, http.client.HTTPException) as exc:
                    status, error = 0, repr(exc)
            with self._lock:
                self.sent += 1
                self.retried += retried
                if status != 200:
                    self.failed += 1
                    self.errors.append(error or f"HTTP {status}")
        conn.close()


def controller_run(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "skyform.cli.main", "controller", "run", "--poll", "0.2"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def driver_pid() -> int | None:
    """The pid of the `controller run` service whose adoption drives `web`."""
    with open_state() as db:
        lease = db.get_lease("service/web")
    return int(lease.purpose.rsplit(":", 1)[1]) if lease else None


def took_over(since: float) -> tuple[float, int] | None:
    """When a controller that adopted `web` after `since` had pushed its replica set."""
    with open_state() as db:
        for event in db.events(since=since):
            if event.kind == "serve.took_over" and event.data.get("service") == "web":
                return event.ts, int(event.data["pid"])
    return None


def wait_for(check, timeout: float):
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def ready(record: dict, n: int) -> bool:
    return record["status"] == "READY" and sum(
        r["status"] == "READY" for r in record["replicas"]
    ) == n  # fmt: skip


def test_kill_9_of_the_controller_the_service_is_adopted_and_serves_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("SKYFORM_LEASE_TTL", str(LEASE_TTL))  # for skyform() and this process
    env = {**os.environ, **APP_ENV}
    services = [controller_run(env)]
    task = tmp_path / "web.yaml"
    task.write_text(service_yaml(2))
    try:
        with open_state() as db:
            wait_for(lambda: db.list_leases("controller/"), 30)
        up = skyform("serve", "up", str(task), "-y")
        assert "Submitted: controller " in up.stderr and "will adopt it" in up.stderr
        record = wait_until("web", lambda r: ready(r, 2), timeout=60)
        lb_pid, endpoint = record["lb_pid"], record["endpoint"]
        replicas = {r["replica_id"]: r["endpoint"] for r in record["replicas"]}
        times: list[float] = []
        with KeepAliveClients(endpoint) as clients:
            for round_ in range(ROUNDS):
                time.sleep(1.0)  # requests flow before the kill
                record = wait_until("web", lambda r: r["controller_pid"] is not None)
                driver = wait_for(driver_pid, 10)
                if round_ % 2 == 0:  # the service's own controller
                    victim = record["controller_pid"]
                else:  # the `controller run` driving it; another one is there to adopt
                    services.append(controller_run(env))
                    with open_state() as db:
                        wait_for(lambda: len(db.list_leases("controller/")) == 2, 30)
                    victim = driver
                killed = time.time()
                os.kill(victim, signal.SIGKILL)
                at, pid = wait_for(lambda k=killed: took_over(k), 3 * LEASE_TTL)
                assert pid != record["controller_pid"]
                times.append(at - killed)
                after = wait_until("web", lambda r, p=pid: r["controller_pid"] == p)
                assert after["lb_pid"] == lb_pid and after["endpoint"] == endpoint  # LB kept
                kept = {r["replica_id"]: r["endpoint"] for r in after["replicas"]}
                assert kept == replicas and ready(after, 2)  # no replica relaunched
                services = [p for p in services if p.poll() is None]
            time.sleep(1.0)
        print(
            f"\nadoption (kill -9 -> new controller holds the lease and pushed the replica "
            f"set): {', '.join(f'{t:.2f}' for t in times)} s; requests sent {clients.sent}, "
            f"retried {clients.retried}, failed {clients.failed}"
        )
        assert clients.failed == 0, clients.errors[:5]
        assert clients.sent > 1000
        assert max(times) < LEASE_TTL

        task.write_text(service_yaml(3))  # the adopter scales the service by an update
        skyform("serve", "update", "web", str(task), "-y")
        record = wait_until("web", lambda r: ready(r, 3), timeout=60)
        assert record["lb_pid"] == lb_pid
        skyform("serve", "down", "web", "-y")
        assert not pid_alive(lb_pid)  # stopped before the record went
        wait_for(lambda: not pid_alive(record["controller_pid"]), 10)  # exits right after
        assert "No existing services." in skyform("serve", "status").stdout
    finally:
        for proc in services:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
        skyform("serve", "down", "web", "-y", "--purge", check=False)


def test_a_controller_whose_lease_was_taken_stops_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The service's lease taken anew by another holder (the old controller frozen past its
    expiry, say): its fencing token refuses the old controller's next write, and it stops
    without tearing anything down; the load balancer serves on."""
    monkeypatch.setenv("SKYFORM_LEASE_TTL", str(LEASE_TTL))
    task = tmp_path / "web.yaml"
    task.write_text(service_yaml(1))
    skyform("serve", "up", str(task), "-y")
    try:
        record = wait_until("web", lambda r: ready(r, 1), timeout=60)
        controller = record["controller_pid"]
        with open_state() as db:
            db.force_unlock("service/web")
            taken = db.try_lease("service/web", purpose="another controller", ttl=60)
            assert taken is not None
            wait_for(lambda: not pid_alive(controller), 5)
            written = "SELECT updated_at FROM services WHERE name='web'"
            before = (db.execute(written).fetchone()["updated_at"], record["replicas"])
            time.sleep(1.0)
            after = wait_until("web", lambda r: True)
            assert db.execute(written).fetchone()["updated_at"] == before[0]  # no write since
            assert after["replicas"] == before[1]  # nothing torn down
            assert get(f"{record['endpoint']}/echo")[0] == 200
            db.release_lease(taken)
    finally:
        skyform("serve", "down", "web", "-y", "--purge", check=False)
    assert not pid_alive(record["lb_pid"])
