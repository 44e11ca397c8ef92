"""What the connection keeper and its clients share: knobs, socket paths, the cluster's
digest and the framed protocol over the Unix socket. Standard library only (no paramiko:
a client the keeper serves never loads it).

A frame is one kind byte, a 4-byte big-endian length and the payload. One request per
connection: the client sends REQUEST (JSON) and, when it has input, INPUT; the keeper
answers ACCEPTED before a command starts on the node, then STDOUT, STDERR and EXIT, or
FAILED (the node's error, as the direct path raises it), or OK (open, put, ping, quit), or
DECLINED (not this cluster's keeper: nothing was started).
"""

from __future__ import annotations

import json
import os
import socket
import struct
from dataclasses import asdict
from pathlib import Path

from skyform.digests import sha256_hex
from skyform.errors import ExecError, NodeUnreachable, SkyformError
from skyform.exec.hostkeys import host_pattern
from skyform.exec.runner import Timeouts
from skyform.paths import home
from skyform.state.models import ClusterHandle, NodeKind

PROTOCOL = 1
ENABLE_ENV = "SKYFORM_SSH_KEEPER"  # 0 / off / false / no: every exec connects directly
IDLE_ENV = "SKYFORM_SSH_KEEPER_IDLE"  # seconds without a request before the keeper exits
DEFAULT_IDLE = 300.0  # SkyPilot's ControlPersist
SUN_PATH_MAX = 107  # sockaddr_un.sun_path is 108 bytes with its NUL

REQUEST, INPUT, ACCEPTED, STDOUT, STDERR = b"Q", b"I", b"A", b"O", b"E"
EXIT, FAILED, OK, DECLINED = b"X", b"F", b"K", b"D"
_HEADER = struct.Struct(">cI")
MAX_FRAME = 1 << 30


class WireError(Exception):
    """The other end closed or sent something that is not a frame."""


# --- knobs and places ----------------------------------------------------------------------


def enabled() -> bool:
    return os.environ.get(ENABLE_ENV, "").strip().lower() not in ("0", "off", "false", "no")


def idle_seconds() -> float:
    text = os.environ.get(IDLE_ENV, "").strip()
    try:
        value = float(text) if text else DEFAULT_IDLE
    except ValueError:
        value = -1.0
    if not value > 0:
        raise SkyformError(
            f"{IDLE_ENV}={text!r} is not a number of seconds above 0",
            f"Set it to e.g. 300, or turn the SSH connection keeper off with {ENABLE_ENV}=0.",
        )
    return value


def keeper_dir() -> Path:
    return home() / "keepers"


def _cluster_tag(name: str) -> str:
    return sha256_hex(name)[:12]


def socket_path(cluster: str, digest: str) -> Path:
    return keeper_dir() / f"{_cluster_tag(cluster)}-{digest[:16]}.sock"


def cluster_sockets(cluster: str | None) -> list[Path]:
    """The sockets of every keeper of `cluster` (of every cluster with None)."""
    pattern = "*.sock" if cluster is None else f"{_cluster_tag(cluster)}-*.sock"
    try:
        return sorted(keeper_dir().glob(pattern))
    except OSError:
        return []


def fits(path: Path) -> bool:
    return len(os.fsencode(path)) <= SUN_PATH_MAX


def keepable(cluster: ClusterHandle) -> bool:
    """SSH nodes only, whose key paramiko loads from memory (a certificate beside it: no)."""
    return bool(cluster.nodes) and all(
        n.kind is NodeKind.SSH
        and not (n.identity_file and Path(n.identity_file + "-cert.pub").expanduser().exists())
        for n in cluster.nodes
    )


def identity_files(cluster: ClusterHandle) -> list[str]:
    return sorted(
        {str(Path(n.identity_file).expanduser()) for n in cluster.nodes if n.identity_file}
    )


def cluster_digest(cluster: ClusterHandle, known_hosts: Path, timeouts: Timeouts) -> str | None:
    """Everything a keeper's connections depend on: the nodes' handles, the host keys
    recorded for them, the identity files (as they are now) and the timeouts. After a
    recovery, a re-key or a new key, the digest differs and an old keeper is never asked.
    None while a node has no recorded host key: first contact (which records it) is direct,
    or the digest would change under the keeper that made it."""
    patterns = {host_pattern(n.host, n.port) for n in cluster.nodes}
    try:
        lines = known_hosts.read_text().splitlines()
    except OSError:
        lines = []
    recorded = sorted(ln for ln in lines if ln.split(" ", 1)[0] in patterns)
    if {ln.split(" ", 1)[0] for ln in recorded} != patterns:
        return None
    keys = []
    for path in identity_files(cluster):
        try:
            stat = os.stat(path)
            keys.append([path, stat.st_mtime_ns, stat.st_size])
        except OSError:
            keys.append([path, None, None])
    nodes = [n.model_dump(mode="json") for n in cluster.nodes]
    text = json.dumps(
        [PROTOCOL, cluster.name, nodes, str(known_hosts), recorded, keys, asdict(timeouts)],
        sort_keys=True,
    )
    return sha256_hex(text)


# --- frames --------------------------------------------------------------------------------


def send(sock: socket.socket, kind: bytes, payload: bytes = b"") -> None:
    sock.sendall(_HEADER.pack(kind, len(payload)) + payload)


def send_json(sock: socket.socket, kind: bytes, value: object) -> None:
    send(sock, kind, json.dumps(value).encode())


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise WireError("the other end closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def recv(sock: socket.socket) -> tuple[bytes, bytes]:
    kind, size = _HEADER.unpack(_exactly(sock, _HEADER.size))
    if size > MAX_FRAME:
        raise WireError(f"frame of {size} bytes")
    return kind, _exactly(sock, size) if size else b""


def error_doc(exc: ExecError) -> dict[str, str | None]:
    reason = exc.reason if isinstance(exc, NodeUnreachable) else None
    return {"message": exc.message, "hint": exc.hint, "reason": reason}


def error_of(payload: bytes) -> ExecError:
    """The node's error as the keeper's SSHRunner raised it."""
    doc = json.loads(payload)
    if doc.get("reason") is not None:
        return NodeUnreachable(doc["message"], doc.get("hint"), reason=doc["reason"])
    return ExecError(doc["message"], doc.get("hint"))
