"""The SSH connection keeper of one cluster: `python -m skyform.exec.keeper`, started by the
first command that needs it (skyform/exec/keeperclient.py), as OpenSSH's ControlPersist.

It holds one SSHRunner (a paramiko transport) per node, connected on first use, and serves
the cluster's non-interactive commands over a Unix socket (skyform/exec/keeperwire.py).
Commands run through the same SSHRunner code as the direct path, so host keys are checked
against the same known_hosts with the same policy, and timeouts and errors are the same.

Everything it needs arrives as one JSON document on stdin, the private keys included: they
are never in argv, in an environment, in a log or in a file written here. It exits after
`idle` seconds without a request, on `quit` (skyform down/stop), when its socket is
removed or replaced, or when the state store no longer gives its nodes to its cluster: a
teammate sharing the store took the cluster down (or replaced its nodes) from another
SKYFORM_HOME, whose `down` stops only the keepers there.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import io
import json
import os
import socket
import struct
import sys
import threading
import time
from pathlib import Path

import paramiko

from skyform.errors import ExecError
from skyform.exec import keeperwire as wire
from skyform.exec.hostkeys import KnownHosts
from skyform.exec.runner import Timeouts
from skyform.exec.ssh import SSHRunner
from skyform.state.models import NodeHandle

STATE_CHECK = 5.0  # seconds between two looks at the state store

_KEY_TYPES: tuple[type[paramiko.PKey], ...] = (
    paramiko.Ed25519Key,
    paramiko.ECDSAKey,
    paramiko.RSAKey,
)


def load_key(data: bytes) -> paramiko.PKey:
    """A private key from its file's bytes, in memory (a passphrase-protected key raises)."""
    text = data.decode()
    for kind in _KEY_TYPES:
        with contextlib.suppress(Exception):  # not this type, or it needs a passphrase
            return kind.from_private_key(io.StringIO(text))
    raise ValueError("paramiko cannot load this key without its file")


class Keeper:
    def __init__(self, doc: dict, keys: dict[str, paramiko.PKey], server: socket.socket) -> None:
        self.digest: str = doc["digest"]
        self.path = Path(doc["socket"])
        self.idle: float = float(doc["idle"])
        self.nodes = {n.rank: n for n in map(NodeHandle.model_validate, doc["nodes"])}
        self.known_hosts = KnownHosts(Path(doc["known_hosts"]))
        self.timeouts = Timeouts(**doc["timeouts"])
        self.keys = keys
        self.server = server
        self.inode = os.stat(self.path).st_ino
        self.runners: dict[int, SSHRunner] = {}
        self.node_locks = {rank: threading.Lock() for rank in self.nodes}
        self.lock = threading.Lock()
        self.active = 0
        self.last = time.monotonic()
        self.stopping = False
        self.cluster: str | None = doc.get("cluster")  # None: started by an older client
        self.taken_away = False  # the state store gives its nodes to no cluster of that name

    def runner(self, rank: int) -> SSHRunner:
        """The node's runner, connected the first time (a failure is raised, not kept)."""
        with self.node_locks[rank]:
            runner = self.runners.get(rank)
            if runner is None:
                node = self.nodes[rank]
                path = node.identity_file and str(Path(node.identity_file).expanduser())
                key = self.keys.get(path) if path else None
                runner = SSHRunner(node, self.known_hosts, self.timeouts, identity=key)
                runner.connect()
                self.runners[rank] = runner
            return runner

    # --- serving -------------------------------------------------------------------------

    def watch_state(self) -> None:
        """Look at the state store now and then (in its own thread: a store that does not
        answer never holds up a request) until the nodes, once seen as the cluster's, are
        no longer its own. Nodes the store never gave the cluster (a handle not recorded)
        are no sign of anything."""
        seen = False
        node_ids = [n.node_id for n in self.nodes.values()]
        while not self.stopping and self.cluster is not None:
            owned = _owned(self.cluster, node_ids)
            if owned is False and seen:
                self.taken_away = True
                return
            seen = seen or owned is True
            time.sleep(STATE_CHECK)

    def serve(self) -> None:
        threading.Thread(target=self.watch_state, daemon=True).start()
        self.server.settimeout(1.0)
        while not self.stopping:
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                if self._should_exit():
                    break
                continue
            except OSError:
                break
            if not self._same_user(conn):
                conn.close()
                continue
            with self.lock:
                self.active += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()
        self._close()

    def _should_exit(self) -> bool:
        if self.taken_away:
            return True  # requests under way finish first (_close waits for them)
        try:
            if os.stat(self.path).st_ino != self.inode:
                return True  # another keeper owns the name now, or it was removed
        except OSError:
            return True
        with self.lock:
            return self.active == 0 and time.monotonic() - self.last > self.idle

    @staticmethod
    def _same_user(conn: socket.socket) -> bool:
        """Belt and braces beside the 0700 directory: only our own user is served."""
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[1] == os.getuid()

    def _handle(self, conn: socket.socket) -> None:
        try:
            with conn:
                self._answer(conn)
        except (OSError, wire.WireError, ValueError, KeyError):
            pass  # the client went away or spoke nonsense: it falls back or reports a loss
        finally:
            with self.lock:
                self.active -= 1
                self.last = time.monotonic()

    def _answer(self, conn: socket.socket) -> None:
        kind, payload = wire.recv(conn)
        request = json.loads(payload) if kind == wire.REQUEST else {}
        op = request.get("op")
        if op == "quit":  # any client of ours may stop it, whatever it thinks the digest is
            self.stopping = True
            self._unlink()  # no new request reaches it; those under way finish first
            wire.send(conn, wire.OK)
            return
        if request.get("digest") != self.digest or op not in ("ping", "open", "run", "put"):
            wire.send(conn, wire.DECLINED)
            return
        if op == "ping":
            wire.send_json(conn, wire.OK, {"pid": os.getpid()})
            return
        rank = int(request["rank"])
        data = wire.recv(conn)[1] if request.get("input") else None
        try:
            if op == "open":
                self.runner(rank).ensure_connected()
                wire.send(conn, wire.OK)
            elif op == "put":
                runner = self.runner(rank)
                wire.send(conn, wire.ACCEPTED)
                runner.put_bytes(data or b"", request["path"], int(request["mode"]))
                wire.send(conn, wire.OK)
            else:
                runner = self.runner(rank)
                wire.send(conn, wire.ACCEPTED)  # from here on the client never retries
                result = runner.run(
                    request["cmd"], env=request.get("env"), timeout=request.get("timeout"),
                    stdin=data,
                )  # fmt: skip
                wire.send(conn, wire.STDOUT, result.raw_stdout)
                wire.send(conn, wire.STDERR, result.stderr.encode())
                wire.send_json(conn, wire.EXIT, {"code": result.exit_code})
        except ExecError as exc:
            wire.send_json(conn, wire.FAILED, wire.error_doc(exc))

    def _unlink(self) -> None:
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.inode:
                self.path.unlink()

    def _close(self) -> None:
        self._unlink()
        self.server.close()
        while True:  # each request under way is bounded by its command's own timeout
            with self.lock:
                if not self.active:
                    break
            time.sleep(0.05)
        for runner in list(self.runners.values()):
            with contextlib.suppress(Exception):
                runner.close()


def _owned(cluster: str, node_ids: list[str]) -> bool | None:
    """Whether the state store records every one of these nodes as `cluster`'s (False once
    the cluster was taken down or its nodes replaced). None: the store cannot be read, which
    says nothing; the keeper serves on and looks again later."""
    from skyform.state.db import open_state

    try:
        with open_state() as db:
            return all(db.node_owner(node_id) == cluster for node_id in node_ids)
    except Exception:  # any failure to read the store (away, restarting, a bad URL)
        return None


def _bind(path: Path) -> socket.socket:
    """Listen on `path`, replacing a socket nobody answers on (a keeper that died)."""
    with contextlib.suppress(FileNotFoundError):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
            raise OSError("another keeper answers on this socket")
        except (ConnectionRefusedError, FileNotFoundError):
            path.unlink(missing_ok=True)
        finally:
            probe.close()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o600)
    server.listen(128)
    return server


def _take(lock: int, wait: float = 3.0) -> bool:
    """The name's lock, held for the keeper's life: another keeper of the same cluster
    starting at once gives way, one that is shutting down is waited for briefly."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def main() -> int:
    os.umask(0o077)  # the socket and anything else made here: this user only
    out = sys.stdout.buffer
    try:
        doc = json.loads(sys.stdin.buffer.read())
        if doc.get("protocol") != wire.PROTOCOL:
            raise ValueError("protocol version differs")
        keys = {path: load_key(base64.b64decode(text)) for path, text in doc["keys"].items()}
        doc["keys"] = None
        path = Path(doc["socket"])
        lock = os.open(f"{path}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        if not _take(lock):
            out.write(b"busy\n")
            return 0
        server = _bind(path)
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        out.write(f"error {type(exc).__name__}\n".encode())
        return 1
    if os.fork():  # the starter waits for this parent only: no zombie, no orphaned Popen
        os._exit(0)
    keeper = Keeper(doc, keys, server)
    out.write(b"ready\n")
    out.flush()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # nothing of the starter's stays open here
        os.dup2(null, fd)
    keeper.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
