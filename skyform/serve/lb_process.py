"""The load balancer as a process of its own: started by a service's controller, it outlives
it (its own session; no watch of its parent), so a controller killed with `kill -9` costs the
clients nothing while another controller adopts the service.

Its endpoint is in the service record: the host it runs on, its pid, public and control
ports. A controller that adopts the service keeps the LB when it runs on this host and its
control port answers, and starts a new one only when it is gone (`find`); `serve down` stops
it (`stop`: SIGTERM, its in-flight requests end, then SIGKILL after LB_STOP_SECONDS).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from skyform.errors import SkyformError
from skyform.serve import state
from skyform.serve.lb.config import LbConfig, ReplicaSet, write_json_atomic
from skyform.state.leases import pid_alive

LB_STOP_SECONDS = 10.0  # for the LB's in-flight requests to end at shutdown, then it is killed
START_SECONDS = 30.0
HEALTH_TIMEOUT = 2.0


def find(record: state.ServiceRecord) -> bool:
    """The record's load balancer runs on this host and its control port answers."""
    if record.lb_pid is None or record.control_port is None or not record.lb_host:
        return False
    if record.lb_host != socket.gethostname() or not pid_alive(record.lb_pid):
        return False
    url = f"http://127.0.0.1:{record.control_port}/-/health"
    try:
        with urllib.request.urlopen(url, timeout=HEALTH_TIMEOUT) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def start(folder: Path, config: LbConfig) -> tuple[int, int, int]:
    """Start a load balancer with `config` and an empty replica set; (pid, port, control
    port) once it listens."""
    write_json_atomic(folder / "replicas.json", ReplicaSet())
    write_json_atomic(folder / "lb.json", config)
    ports = folder / "lb.ports.json"
    ports.unlink(missing_ok=True)
    out = open(folder / "lb.log", "ab")  # noqa: SIM115 - handed to the child
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skyform.serve.lb", str(folder / "lb.json")],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a kill of the controller's process group spares it
            close_fds=True,
        )
    finally:
        out.close()
    deadline = time.monotonic() + START_SECONDS
    while not ports.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SkyformError("the load balancer did not start; see its log")
        time.sleep(0.05)
    bound = json.loads(ports.read_text())
    return proc.pid, int(bound["port"]), int(bound["control_port"])


def stop(pid: int) -> None:
    """SIGTERM: the LB takes no new clients and its in-flight requests end; after
    LB_STOP_SECONDS it is killed (a request may wait on a replica that is gone)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + LB_STOP_SECONDS
    while pid_alive(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
        _reap(pid)
    _reap(pid)


def _reap(pid: int) -> None:
    """Our own child (an LB this controller started) is waited for, not left a zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
