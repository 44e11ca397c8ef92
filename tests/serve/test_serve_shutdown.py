"""`serve down` ends even when the load balancer still holds a request for a replica whose
node went silent (a Kubernetes pod deleted mid-request, a node lost): every replica is torn
down by then and nothing can answer it. The controller gives the LB its grace to finish
in-flight requests, then kills it and removes the service; before, it crashed on the LB's
wait, left the service behind, and `serve down` waited 300 s to say it was not torn down."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request

from skyform.serve import lb_process, state
from skyform.serve.controller import ServiceController
from skyform.serve.lb.config import LbConfig, ReplicaEntry, ReplicaSet, write_json_atomic

GRACE = 1.0


def _silent_replica() -> tuple[socket.socket, list[socket.socket]]:
    """Takes connections and never answers nor closes them (a node that went silent)."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return server, held


def _start_lb(folder, replica: str) -> tuple[subprocess.Popen[bytes], int]:
    write_json_atomic(
        folder / "replicas.json", ReplicaSet(replicas=(ReplicaEntry(url=replica, replica_id=1),))
    )
    config = LbConfig(
        service="svc",
        port=0,
        replicas_file=str(folder / "replicas.json"),
        ports_file=str(folder / "lb.ports.json"),
    )
    write_json_atomic(folder / "lb.json", config)
    lb = subprocess.Popen([sys.executable, "-m", "skyform.serve.lb", str(folder / "lb.json")])
    deadline = time.monotonic() + 30
    while not (folder / "lb.ports.json").exists():
        assert lb.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    return lb, json.loads((folder / "lb.ports.json").read_text())["port"]


def test_shutdown_kills_a_load_balancer_whose_request_never_ends(monkeypatch):
    monkeypatch.setattr(lb_process, "LB_STOP_SECONDS", GRACE)
    folder = state.service_dir("svc")
    folder.mkdir(parents=True)
    server, held = _silent_replica()
    lb, port = _start_lb(folder, f"http://127.0.0.1:{server.getsockname()[1]}")

    def client() -> None:
        with contextlib.suppress(OSError):  # the LB is killed under it
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60)

    waiting = threading.Thread(target=client, daemon=True)
    try:
        waiting.start()
        deadline = time.monotonic() + 10
        while not held:  # the request reached the replica, which will never answer
            assert time.monotonic() < deadline
            time.sleep(0.05)

        ctl = ServiceController.__new__(ServiceController)  # what its shutdown works on
        ctl.name, ctl.folder, ctl.replicas, ctl.db = "svc", folder, {}, None
        ctl.record = state.ServiceRecord(name="svc", task_path="svc.yaml", lb_pid=lb.pid)
        ctl.stopping = True
        began = time.monotonic()
        asyncio.run(ctl._shutdown())
        assert GRACE <= time.monotonic() - began < GRACE + 5
        assert lb.poll() is not None  # killed after its grace
        assert state.read_record("svc") is None and not folder.exists()  # the service is gone
    finally:
        if lb.poll() is None:
            lb.kill()
        server.close()
        for sock in held:
            sock.close()
