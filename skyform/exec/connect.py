"""One NodeRunner interface over the two kinds of node.

- `SSHRunner`: a Fabric `Connection` (one per node, reused for every command), explicit
  connect/banner/auth/channel timeouts — paramiko's channel default is 3600 s, so a hung host
  would otherwise hang us — TCP_NODELAY, skyform's known_hosts with OpenSSH's accept-new
  policy. Commands run on raw session channels: byte-exact output, a hard deadline per command.
- `LocalRunner`: the node is a directory on this machine acting as the node's HOME; commands
  are local processes with HOME and cwd set to it.

Remote paths may be absolute, `~`-relative or relative (to the node's home).
Never put secrets in `cmd` or `env=` (both can reach a process list); pass them on stdin.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from skyform.errors import ExecError, NodeUnreachable
from skyform.exec.hostkeys import KnownHosts
from skyform.exec.runner import CommandResult, NodeRunner, Timeouts, to_bytes
from skyform.paths import ensure_dir, write_atomic
from skyform.state.models import NodeHandle, NodeKind

LOCAL_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"


class LocalRunner(NodeRunner):
    """A node that is a directory here: HOME=cwd=root, processes of this user."""

    def __init__(self, node: NodeHandle, timeouts: Timeouts) -> None:
        super().__init__(node, timeouts)
        if not node.root:
            raise ExecError(f"local node {node.rank} has no root directory in its handle")
        self.root = Path(node.root).expanduser().resolve()
        ensure_dir(self.root)

    def path(self, remote_path: str) -> Path:
        if remote_path in ("~", ""):
            return self.root
        if remote_path.startswith("~/"):
            remote_path = remote_path[2:]
        return Path(remote_path) if remote_path.startswith("/") else self.root / remote_path

    def base_env(self) -> dict[str, str]:
        env = {
            "HOME": str(self.root),
            "PATH": os.environ.get("PATH") or LOCAL_PATH,
            "SHELL": "/bin/bash",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        for name in ("USER", "LOGNAME", "TMPDIR", "TZ"):
            if name in os.environ:
                env[name] = os.environ[name]
        return env

    def _spawn(self, cmd: str, env, data: bytes | None) -> subprocess.Popen:
        return subprocess.Popen(
            ["/bin/bash", "-c", cmd],
            cwd=self.root,
            env={**self.base_env(), **(env or {})},
            stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a timeout kills the command's group, not detached jobs
        )

    def run(self, cmd, *, env=None, timeout=None, stdin=None) -> CommandResult:
        data = to_bytes(stdin)
        try:
            proc = self._spawn(cmd, env, data)
        except FileNotFoundError:  # cwd: the cluster was torn down under us
            raise NodeUnreachable(
                f"{self.label}: node directory {self.root} is gone", reason="lost"
            ) from None
        try:
            out, err = proc.communicate(data, timeout=timeout or self.timeouts.command)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise ExecError(
                f"{self.label}: command did not finish within {timeout or self.timeouts.command:g}s"
            ) from None
        return CommandResult(
            proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"), out
        )

    def close(self) -> None:
        return None  # nothing held open

    def put_bytes(self, data: bytes, remote_path: str, mode: int = 0o644) -> None:
        target = self.path(remote_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            write_atomic(target, data, mode)
        except OSError as exc:
            raise ExecError(f"{self.label}: cannot write {target}: {exc.strerror}") from None


def open_runner(
    node: NodeHandle,
    *,
    known_hosts: KnownHosts | None = None,
    timeouts: Timeouts | None = None,
) -> NodeRunner:
    """Connect to one node (SSH nodes are connected before this returns)."""
    timeouts = timeouts or Timeouts()
    if node.kind is NodeKind.LOCAL:
        return LocalRunner(node, timeouts)
    from skyform.exec.ssh import SSHRunner  # paramiko/fabric load only when a node is remote

    runner = SSHRunner(node, known_hosts or KnownHosts(), timeouts)
    runner.connect()
    return runner


def open_runners(
    nodes: Sequence[NodeHandle],
    *,
    known_hosts: KnownHosts | None = None,
    timeouts: Timeouts | None = None,
) -> dict[int, NodeRunner | NodeUnreachable]:
    """Connect to every node in parallel; a node that fails maps to its NodeUnreachable."""
    known_hosts = known_hosts or KnownHosts()

    def one(node: NodeHandle) -> NodeRunner | NodeUnreachable:
        try:
            return open_runner(node, known_hosts=known_hosts, timeouts=timeouts)
        except NodeUnreachable as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, min(64, len(nodes)))) as pool:
        return dict(zip((n.rank for n in nodes), pool.map(one, nodes), strict=True))


def wait_for_ssh(
    nodes: Sequence[NodeHandle],
    *,
    timeout: float = 300.0,
    known_hosts: KnownHosts | None = None,
    timeouts: Timeouts | None = None,
    interval: float = 1.0,
) -> None:
    """Retry until every node answers (freshly provisioned nodes boot and install keys).

    A changed host key is never retried. On timeout, raises the last error of the first
    node that never answered, naming how many did not.
    """
    deadline = time.monotonic() + timeout
    pending = list(nodes)
    while True:
        results = open_runners(pending, known_hosts=known_hosts, timeouts=timeouts)
        failed: list[tuple[NodeHandle, NodeUnreachable]] = []
        for node in pending:
            result = results[node.rank]
            if isinstance(result, NodeUnreachable):
                if result.reason == "host_key":
                    raise result
                failed.append((node, result))
            else:
                result.close()
        if not failed:
            return
        if time.monotonic() + interval >= deadline:
            node, error = failed[0]
            others = (
                f" ({len(failed)} of {len(nodes)} nodes did not answer)" if len(failed) > 1 else ""
            )
            raise NodeUnreachable(
                f"gave up waiting {timeout:g}s for SSH: {error.message}{others}", hint=error.hint
            )
        pending = [node for node, _ in failed]
        time.sleep(interval)
