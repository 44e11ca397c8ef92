"""The NodeRunner interface every kind of node implements (a leaf: connect.py picks the
runner, ssh.py and connect.py's LocalRunner implement it; neither imports the other's module).

Remote paths may be absolute, `~`-relative or relative (to the node's home).
Never put secrets in `cmd` or `env=` (both can reach a process list); pass them on stdin.
"""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

from skyform.errors import ExecError, NodeUnreachable
from skyform.state.models import NodeHandle, NodeKind


@dataclass(frozen=True)
class Timeouts:
    """Seconds. `command` bounds one short command (status, launch, probe)."""

    connect: float = 10.0
    banner: float = 10.0
    auth: float = 15.0
    channel: float = 15.0
    command: float = 120.0
    keepalive: int = 15


@dataclass(frozen=True)
class CommandResult:
    exit_code: int
    stdout: str
    stderr: str
    raw_stdout: bytes = field(default=b"", repr=False)  # byte-exact, for logs

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def node_label(node: NodeHandle) -> str:
    if node.kind is NodeKind.LOCAL:
        return f"node {node.rank} (local {node.root})"
    return f"node {node.rank} ({node.user or 'root'}@{node.host}:{node.port})"


def lost_node(rank: int, where: str, what: str) -> NodeUnreachable:
    """A node's SSH connection dropped `what` ("during a command"): one wording for the
    direct path and the connection keeper's client."""
    return NodeUnreachable(
        f"lost the connection to node {rank} ({where}) {what}: the node went "
        "away (preempted, rebooted, or the network dropped)",
        hint="run `skyform status` to see the cluster; managed jobs recover by themselves",
        reason="lost",
    )


def command_timeout(rank: int, where: str, budget: float) -> NodeUnreachable:
    return NodeUnreachable(
        f"node {rank} ({where}) did not finish a command within {budget:g}s",
        hint="the node may be overloaded or hung; retry, or raise the timeout",
        reason="timeout",
    )


def export_prefix(env: Mapping[str, str] | None) -> str:
    """`export K='v'; ` for non-secret values — Fabric would not quote them."""
    if not env:
        return ""
    return "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.items())


def to_bytes(data: bytes | str | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data


class NodeRunner(ABC):
    """Run commands and place files on one node."""

    def __init__(self, node: NodeHandle, timeouts: Timeouts) -> None:
        self.node = node
        self.timeouts = timeouts

    @property
    def label(self) -> str:
        return node_label(self.node)

    @abstractmethod
    def run(
        self,
        cmd: str,
        *,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: bytes | str | None = None,
    ) -> CommandResult:
        """Run `cmd` in the node user's shell; stdin is closed unless given."""

    @abstractmethod
    def put_bytes(self, data: bytes, remote_path: str, mode: int = 0o644) -> None:
        """Write a file atomically (temp + rename), creating its parent directories."""

    def put_text(self, text: str, remote_path: str, mode: int = 0o644) -> None:
        self.put_bytes(text.encode(), remote_path, mode)

    def check(self, cmd: str, *, timeout: float | None = None, stdin: bytes | str | None = None):
        """Run and raise ExecError (the node, the exit code, the last lines) on a non-zero exit."""
        result = self.run(cmd, timeout=timeout, stdin=stdin)
        if not result.ok:
            detail = (result.stderr or result.stdout).strip().splitlines()[-3:]
            raise ExecError(
                f"{self.label}: command failed with exit code {result.exit_code}"
                + (f": {' / '.join(detail)}" if detail else "")
            )
        return result

    @abstractmethod
    def close(self) -> None:
        """Release the connection (idempotent)."""

    def __enter__(self) -> NodeRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
