"""How to reach an ssh pool host, and whether its sshd answers (a leaf: the pool engine,
the login check and `skyform check` share it)."""

from __future__ import annotations

import getpass
import os
import socket

from skyform.config import SSHHost, SSHPool
from skyform.state.models import NodeHandle, NodeKind

SSH_PROBE_TIMEOUT = 2.0


def probe_ssh(host: str, port: int, timeout: float = SSH_PROBE_TIMEOUT) -> str | None:
    """None when an SSH server answers with its banner, else a short reason."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            banner = sock.recv(64)
    except TimeoutError:
        return "timed out"
    except OSError as exc:
        return exc.strerror or str(exc)
    if not banner.startswith(b"SSH-"):
        return "answered, but not with an SSH banner"
    return None


def pool_node(rank: int, node_id: str, host: SSHHost, pool: SSHPool) -> NodeHandle:
    """How to reach a pool host (its user and key, else the pool's)."""
    identity = host.identity_file or pool.identity_file
    return NodeHandle(
        rank=rank,
        kind=NodeKind.SSH,
        host=host.host,
        port=host.port or pool.port,
        user=host.user or pool.user or getpass.getuser(),
        identity_file=os.path.expanduser(identity) if identity else None,
        ip=host.host,
        node_id=node_id,
    )
