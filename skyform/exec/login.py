"""`skyform ssh CLUSTER [--node N] [-- CMD ARGS...]`: a shell (or one command) on a node.

SSH nodes are reached with OpenSSH itself (an interactive terminal needs it), with the
cluster's key and skyform's own known_hosts under StrictHostKeyChecking=yes: the node's key
is checked (and recorded on first contact, with skyform's accept-new policy) by connecting
once through skyform's own SSH client first. A `local` node is a directory here: its shell
starts in that directory with HOME pointing at it, as skyform's jobs see it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from skyform.errors import ExecError, StateError
from skyform.exec.hostkeys import KnownHosts
from skyform.state.models import ClusterRecord, NodeHandle, NodeKind


@dataclass(frozen=True)
class Login:
    """A process to run in this terminal: argv, the environment to add, where it starts."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None


def pick_node(record: ClusterRecord, rank: int | None) -> NodeHandle:
    if record.handle is None or not record.handle.nodes:
        raise StateError(
            f"cluster {record.shown_name!r} has no nodes (status {record.status.value})",
            f"Apply its plan again, or take it down: skyform down {record.shown_name}",
        )
    nodes = record.handle.nodes
    if rank is None:
        return nodes[0]
    if not 0 <= rank < len(nodes):
        raise StateError(f"cluster {record.shown_name!r} has nodes 0..{len(nodes) - 1}, not {rank}")
    return nodes[rank]


def login(
    node: NodeHandle, command: list[str], *, tty: bool, container_of: str | None = None
) -> Login:
    """The argv that opens a shell on `node` (or runs `command` there, its words joined by
    spaces for the remote shell, as ssh does). `container_of`: the cluster whose container
    the shell or command runs in (`image_id: docker:...`), as SkyPilot's `ssh CLUSTER`
    lands in the task's container."""
    if node.kind is NodeKind.LOCAL:
        root = str(Path(node.root or "~").expanduser())
        argv = ["/bin/bash", "-c", " ".join(command)] if command else ["/bin/bash", "-l"]
        return Login(argv=argv, env={"HOME": root}, cwd=root)
    if shutil.which("ssh") is None:
        raise ExecError("no `ssh` client on this machine", "Install OpenSSH's client.")
    from skyform.exec.sync import openssh_argv

    argv = openssh_argv(node, KnownHosts())
    if tty and not command:
        argv.append("-t")  # an interactive shell in a real terminal
    argv.append(f"{node.user}@{node.host}" if node.user else node.host)
    text = " ".join(command)
    if container_of is not None:
        from skyform.exec.container import enter_command

        text = enter_command(container_of, text, tty=tty and not command)
    if text:
        argv += ["--", text]
    return Login(argv=argv)


def check_reachable(node: NodeHandle) -> None:
    """Connect once through skyform's client: a clear error for a dead node, a wrong key or
    a changed host key, and the key recorded on first contact (ssh then checks it)."""
    if node.kind is NodeKind.LOCAL:
        if not Path(node.root or "").is_dir():
            raise StateError(f"node {node.rank}'s directory {node.root} is gone")
        return
    from skyform.exec.connect import open_runner

    open_runner(node).close()


def run_login(target: Login) -> int:
    """Run it attached to this terminal; its exit code. Ctrl-C belongs to the session."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return subprocess.call(
            target.argv,
            cwd=target.cwd,
            env={**os.environ, **target.env},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    finally:
        signal.signal(signal.SIGINT, previous)
