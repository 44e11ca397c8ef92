"""The client of the SSH connection keeper (skyform/exec/keeper.py): OpenSSH's
ControlMaster/ControlPersist for a cluster's non-interactive commands.

A fresh `skyform exec` would pay TCP + key exchange + auth per node (~13 ms of CPU each);
through the keeper a command costs one Unix-socket round trip, and this process never
loads paramiko. `runner_opener` finds the cluster's keeper (its socket is named by the
cluster's digest: nodes, host keys, identity files, timeouts), starts one when there is
none, and hands out KeeperRunners. Interactive `skyform ssh`, rsync (its own `ssh`) and
SFTP stay on direct connections.

Whatever goes wrong with the keeper before a command has started on the node (no socket,
refused, declined, a garbled answer) falls back to a direct connection silently; once the
keeper said a command started, a failure is reported as the direct path reports a lost
node — a command is never run twice.
"""

from __future__ import annotations

import base64
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from skyform.exec import keeperwire as wire
from skyform.exec.connect import open_runner
from skyform.exec.hostkeys import KnownHosts, display
from skyform.exec.runner import (
    CommandResult,
    NodeRunner,
    Timeouts,
    command_timeout,
    lost_node,
    to_bytes,
)
from skyform.paths import ensure_dir
from skyform.state.models import ClusterHandle, NodeHandle

CONNECT_WAIT = 2.0  # for the keeper to take a request (it answers in microseconds)
START_WAIT = 15.0  # for a new keeper to listen (interpreter start + paramiko import)
MARGIN = 10.0  # past the keeper's own deadline, before the keeper counts as hung
SECRET_ENV = ("SKYFORM_PASSPHRASE",)  # the keeper needs none of it: not in its environment

Opener = Callable[[NodeHandle], NodeRunner]


class _NotStarted(Exception):
    """The keeper did not take the request: nothing reached the node."""


class KeeperSocket:
    """One cluster's keeper, as its socket: requests, and whether it has failed us."""

    def __init__(self, path: Path, digest: str) -> None:
        self.path, self.digest = path, digest
        self.failed = False  # once it fails, this process goes direct for the cluster

    def request(self, header: dict, data: bytes | None = None) -> socket.socket:
        if self.failed:
            raise _NotStarted
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(CONNECT_WAIT)
            sock.connect(str(self.path))
            head = {"protocol": wire.PROTOCOL, "digest": self.digest, "input": data is not None}
            wire.send_json(sock, wire.REQUEST, {**head, **header})
            if data is not None:
                wire.send(sock, wire.INPUT, data)
        except OSError:
            sock.close()
            self.failed = True
            raise _NotStarted from None
        return sock

    def ping(self) -> int | None:
        """The keeper's pid when it answers for this digest."""
        try:
            sock = self.request({"op": "ping"})
        except _NotStarted:
            self.failed = False  # not there yet: it may be started
            return None
        with sock:
            try:
                kind, payload = wire.recv(sock)
                return int(json.loads(payload)["pid"]) if kind == wire.OK else None
            except (OSError, wire.WireError, ValueError, KeyError, TypeError):
                return None


class KeeperRunner(NodeRunner):
    """A node reached through the cluster's keeper; direct (connected on demand) for what
    the keeper does not serve, and for everything once the keeper has failed."""

    def __init__(self, node: NodeHandle, timeouts: Timeouts, keeper: KeeperSocket, direct: Opener):
        super().__init__(node, timeouts)
        self.keeper = keeper
        self.where = display(node.host, node.port)
        self._open_direct = direct
        self._direct: NodeRunner | None = None
        self._lock = threading.Lock()

    def direct(self) -> NodeRunner:
        with self._lock:
            if self._direct is None:
                self._direct = self._open_direct(self.node)
            return self._direct

    def _kept(self) -> bool:
        return self._direct is None and not self.keeper.failed

    def connect(self) -> None:
        """Have the keeper connect to the node (errors as open_runner raises them)."""
        if self._kept():
            t = self.timeouts
            try:
                with self.keeper.request({"op": "open", "rank": self.node.rank}) as sock:
                    self._answer(sock, t.connect + t.banner + t.auth, "while connecting")
                return
            except _NotStarted:
                pass
        self.direct()

    def run(self, cmd, *, env=None, timeout=None, stdin=None) -> CommandResult:
        if self._kept():
            budget = timeout or self.timeouts.command
            header = {"op": "run", "rank": self.node.rank, "cmd": cmd, "timeout": budget}
            header["env"] = dict(env) if env else None
            try:
                with self.keeper.request(header, to_bytes(stdin)) as sock:
                    _, payload, out, err = self._answer(sock, budget, "during a command")
                code = int(json.loads(payload)["code"])
                return CommandResult(
                    code, out.decode(errors="replace"), err.decode(errors="replace"), bytes(out)
                )
            except _NotStarted:
                pass
        return self.direct().run(cmd, env=env, timeout=timeout, stdin=stdin)

    def put_bytes(self, data: bytes, remote_path: str, mode: int = 0o644) -> None:
        if self._kept():
            header = {"op": "put", "rank": self.node.rank, "path": remote_path, "mode": mode}
            try:
                with self.keeper.request(header, data) as sock:
                    self._answer(sock, self.timeouts.command, f"while writing {remote_path}")
                return
            except _NotStarted:
                pass
        self.direct().put_bytes(data, remote_path, mode)

    def _answer(
        self, sock: socket.socket, budget: float, what: str
    ) -> tuple[bytes, bytes, bytearray, bytearray]:
        """Frames until the end of the answer: (kind, payload, stdout, stderr). Raises the
        node's error, _NotStarted before the keeper took the command, a lost node after."""
        started = False
        out, err = bytearray(), bytearray()
        # the keeper keeps the deadline; waiting a little longer tells a hung keeper apart
        sock.settimeout(budget + self.timeouts.channel + MARGIN)
        while True:
            try:
                kind, payload = wire.recv(sock)
            except (OSError, wire.WireError) as exc:
                self.keeper.failed = True
                if not started:  # it never said it started: the direct path does it instead
                    raise _NotStarted from None
                if isinstance(exc, TimeoutError):
                    raise command_timeout(self.node.rank, self.where, budget) from None
                raise lost_node(self.node.rank, self.where, what) from None
            if kind == wire.ACCEPTED:
                started = True
            elif kind == wire.STDOUT:
                out += payload
            elif kind == wire.STDERR:
                err += payload
            elif kind in (wire.EXIT, wire.OK):
                return kind, payload, out, err
            elif kind == wire.FAILED:
                raise wire.error_of(payload)
            else:  # declined (not this digest's keeper) or a frame it should not send
                self.keeper.failed = True
                if not started:
                    raise _NotStarted
                raise lost_node(self.node.rank, self.where, what)

    def close(self) -> None:
        with self._lock:
            if self._direct is not None:
                self._direct.close()
                self._direct = None


def direct_runner(runner: NodeRunner) -> NodeRunner:
    """The runner with its own SSH connection (SFTP needs one)."""
    return runner.direct() if isinstance(runner, KeeperRunner) else runner


def runner_opener(cluster: ClusterHandle, known_hosts: KnownHosts, timeouts: Timeouts) -> Opener:
    """How to open each node of `cluster`: through its keeper when there is (or can be)
    one, else directly (connect.open_runner)."""

    def direct(node: NodeHandle) -> NodeRunner:
        return open_runner(node, known_hosts=known_hosts, timeouts=timeouts)

    keeper = find_or_start(cluster, known_hosts, timeouts)
    if keeper is None:
        return direct

    def open_kept(node: NodeHandle) -> NodeRunner:
        runner = KeeperRunner(node, timeouts, keeper, direct)
        runner.connect()
        return runner

    return open_kept


def find_or_start(
    cluster: ClusterHandle, known_hosts: KnownHosts, timeouts: Timeouts
) -> KeeperSocket | None:
    """The cluster's keeper, started if there is none; None when it cannot be used."""
    if not wire.enabled() or not wire.keepable(cluster):
        return None
    idle = wire.idle_seconds()  # a bad setting is the user's to fix: said before anything
    try:
        digest = wire.cluster_digest(cluster, known_hosts.path, timeouts)
        path = wire.socket_path(cluster.name, digest or "")
        if digest is None or not wire.fits(path):
            return None
        keeper = KeeperSocket(path, digest)
        if keeper.ping() is not None:
            return keeper
        ensure_dir(path.parent)
        if _spawn(cluster, keeper, known_hosts, timeouts, idle) not in ("ready", "busy"):
            return None
        deadline = time.monotonic() + 3.0  # "busy": another exec is starting it right now
        while keeper.ping() is None:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)
        stop_keepers(cluster.name, keep=path)  # older digests: before a recovery, a re-key
        return keeper
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def _spawn(
    cluster: ClusterHandle, keeper: KeeperSocket, known_hosts: KnownHosts, timeouts: Timeouts, idle
) -> str:
    """Start a keeper; its first line ("ready", "busy" or "error ...")."""
    keys = {}
    for path in wire.identity_files(cluster):
        if os.path.isfile(path):  # a missing one: the keeper reports it as the direct path
            keys[path] = base64.b64encode(Path(path).read_bytes()).decode()
    doc = {
        "protocol": wire.PROTOCOL,
        "socket": str(keeper.path),
        "digest": keeper.digest,
        "cluster": cluster.name,  # it exits once the state store gives the nodes to no one
        "idle": idle,
        "nodes": [n.model_dump(mode="json") for n in cluster.nodes],
        "known_hosts": str(known_hosts.path),
        "timeouts": asdict(timeouts),
        "keys": keys,  # over the pipe only: never argv, an environment, a log or a file
    }
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    package_root = str(Path(wire.__file__).resolve().parents[2])  # the same skyform as ours
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen(
        [sys.executable, "-m", "skyform.exec.keeper"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        cwd="/", env=env, start_new_session=True,  # Ctrl-C in this terminal never reaches it
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    line = ""
    try:
        proc.stdin.write(json.dumps(doc).encode())
        proc.stdin.close()
        if select.select([proc.stdout], [], [], START_WAIT)[0]:
            line = proc.stdout.readline().decode(errors="replace").strip()
    finally:
        proc.stdout.close()
        if not line:
            proc.kill()
        proc.wait()  # the keeper forks: this is its parent, gone once it listens
    return line


def stop_keepers(cluster: str | None, *, keep: Path | None = None) -> None:
    """Stop the keepers of `cluster` (of every cluster with None), but `keep`'s: for
    `down`/`stop` and when the cluster's nodes changed."""
    for path in wire.cluster_sockets(cluster):
        if path == keep:
            continue
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(CONNECT_WAIT)
                sock.connect(str(path))
                wire.send_json(sock, wire.REQUEST, {"op": "quit"})
                wire.recv(sock)  # it has removed its socket by then
        except (OSError, wire.WireError):
            path.unlink(missing_ok=True)  # a dead keeper's; a hung one exits seeing it gone
