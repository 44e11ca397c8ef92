"""Copy a local directory (the workdir, a file mount) onto one node.

SSH nodes: rsync over ssh with skyform's known_hosts and StrictHostKeyChecking=yes,
`-az --no-owner --no-group` and SkyPilot's ignore filters. No `--delete`: like SkyPilot, a
re-sync never removes what jobs wrote into ~/skyform_workdir (outputs, checkpoints).
When rsync is missing here or on the node: SFTP, skipping files whose size and mtime match.
LOCAL nodes: local rsync into the node directory, else a copy.

"Unchanged" is size and mtime, compared to the nanosecond wherever the method can: rsync's
default compares whole seconds, so a file rewritten at the same size within the second of
the version synced before looked unchanged, was not sent, and the job ran the old file.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from skyform.errors import ExecError, NodeUnreachable
from skyform.exec.connect import LocalRunner
from skyform.exec.hostkeys import KnownHosts
from skyform.exec.ignore import IgnoreRules, walk
from skyform.exec.mounts import make_dir_command
from skyform.exec.runner import NodeRunner
from skyform.state.models import NodeHandle, NodeKind

RSYNC_FLAGS = ["-az", "--no-owner", "--no-group", "--stats"]
IO_TIMEOUT = 60  # rsync --timeout: a node that stops answering fails the sync, not hangs it
# A negative window makes rsync's quick check compare nanoseconds too, from 3.1.3 on (the
# receiver compares; the sender passes it on as `-@-1`, which an older one may refuse).
EXACT_TIMES = "--modify-window=-1"
EXACT_TIMES_SINCE = (3, 1, 3)


@dataclass(frozen=True)
class SyncResult:
    rank: int
    method: str  # rsync | sftp | copy
    files_sent: int | None  # regular files transferred (None when the method cannot tell)
    seconds: float


def local_rsync() -> str | None:
    return shutil.which("rsync")


def rsync_version(about: str) -> tuple[int, ...] | None:
    """(3, 2, 7) from `rsync  version 3.2.7  protocol version 32` (or `version v3.2.3`)."""
    match = re.search(r"version v?(\d+)\.(\d+)\.(\d+)", about)
    return tuple(int(part) for part in match.groups()) if match else None


def exact_times(*abouts: str) -> bool:
    """Every rsync named (`--version` first lines) compares mtimes to the nanosecond."""
    versions = [rsync_version(about) for about in abouts]
    return all(v is not None and v >= EXACT_TIMES_SINCE for v in versions)


@cache
def _about(rsync: str) -> str:
    """The first line of this machine's `rsync --version` ("" if it does not answer)."""
    try:
        proc = subprocess.run(
            [rsync, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.partition("\n")[0]


def openssh_argv(node: NodeHandle, known_hosts: KnownHosts) -> list[str]:
    """OpenSSH with the node's key and skyform's known_hosts only (keys checked, never
    learned: skyform's own client records them on first contact)."""
    argv = ["ssh", "-F", "/dev/null", "-p", str(node.port)]
    if node.identity_file:
        argv += ["-i", str(Path(node.identity_file).expanduser()), "-o", "IdentitiesOnly=yes"]
    return [
        *argv,
        "-o", f"UserKnownHostsFile={known_hosts.path}",
        "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "StrictHostKeyChecking=yes",
        "-o", "LogLevel=ERROR",
    ]  # fmt: skip


def ssh_command(runner: NodeRunner, known_hosts: KnownHosts) -> str:
    """The `-e` for rsync: same key, same known_hosts, no prompts, bounded connect."""
    argv = [
        *openssh_argv(runner.node, known_hosts),
        "-T",
        "-o", "BatchMode=yes",
        "-o", f"ConnectTimeout={max(1, round(runner.timeouts.connect))}",
        "-o", "ServerAliveInterval=5",
        "-o", "ServerAliveCountMax=3",
    ]  # fmt: skip
    return " ".join(shlex.quote(a) for a in argv)


def _remote_spec(runner: NodeRunner, dst: str) -> str:
    node = runner.node
    host = f"[{node.host}]" if ":" in node.host else node.host
    path = dst[2:] if dst.startswith("~/") else dst  # rsync's remote paths are home-relative
    return f"{node.user or 'root'}@{host}:{path}"


def _files_sent(stdout: str) -> int | None:
    match = re.search(r"Number of regular files transferred: ([\d,]+)", stdout)
    return int(match.group(1).replace(",", "")) if match else None


def _rsync_error(runner: NodeRunner, proc: subprocess.CompletedProcess, src: Path) -> Exception:
    err = proc.stderr.strip()
    tail = " / ".join(err.splitlines()[-3:])
    where = runner.label
    if proc.returncode == 255 or "connection unexpectedly closed" in err:
        if "Host key verification failed" in err or "REMOTE HOST IDENTIFICATION" in err:
            return NodeUnreachable(
                f"{where}: rsync's ssh refused the node's host key: {tail}",
                hint="if the node was rebuilt, run `skyform known-hosts forget HOST:PORT`",
            )
        if "Permission denied" in err:
            return NodeUnreachable(
                f"{where}: rsync's ssh was refused: {tail}",
                hint="check the node's identity_file and user",
            )
        return NodeUnreachable(f"{where}: rsync could not reach the node: {tail}")
    if proc.returncode == 30:
        return NodeUnreachable(f"{where}: rsync timed out ({IO_TIMEOUT}s without progress)")
    return ExecError(
        f"{where}: syncing {src} failed (rsync exit code {proc.returncode}): {tail}",
        hint="check free disk space and permissions on the node",
    )


def _rsync(runner: NodeRunner, argv: list[str], src: Path) -> int | None:
    proc = subprocess.run(
        argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, errors="replace"
    )
    if proc.returncode != 0:
        raise _rsync_error(runner, proc, src)
    return _files_sent(proc.stdout)


def _make_target(runner: NodeRunner, dst: str, is_dir: bool) -> None:
    """What a sync needs to exist first: the parent of `dst` (rsync makes `dst`), or for an
    absolute directory destination `dst` itself, which the node user may only be able to make
    with sudo -n (exec/mounts.py; rsync would fail on `/data`)."""
    absolute = dst.startswith("/")
    target = dst.rstrip("/") if is_dir and absolute else os.path.dirname(dst.rstrip("/"))
    if target and target not in ("~", ".", "/"):
        target = target if target.startswith(("/", "~/")) else "~/" + target
        runner.check(make_dir_command(target))


def sync_path(
    runner: NodeRunner,
    src: Path,
    dst: str,
    *,
    node_has_rsync: bool,
    known_hosts: KnownHosts,
    node_rsync: str = "",
) -> SyncResult:
    """Copy file or directory `src` to `dst` on the node (`~/…`, relative = home, or absolute).

    Directories are merged into `dst` honouring .skyignore / .gitignore; nothing is deleted.
    `node_rsync`: the first line of the node's `rsync --version` (NodeFacts.rsync_about).
    """
    started = time.monotonic()
    src = Path(src).expanduser()
    if not src.exists():
        raise ExecError(f"cannot sync {src}: it does not exist")
    is_dir = src.is_dir()
    filters = IgnoreRules(src).rsync_args() if is_dir else []
    source = f"{src}/" if is_dir else str(src)
    rsync = local_rsync()
    if runner.node.kind is NodeKind.LOCAL:
        assert isinstance(runner, LocalRunner)
        target = runner.path(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        if rsync:
            exact = [EXACT_TIMES] if exact_times(_about(rsync)) else []  # one rsync, both ends
            dest = f"{target}/" if is_dir else str(target)
            argv = [rsync, *RSYNC_FLAGS, *exact, *filters, source, dest]
            sent = _rsync(runner, argv, src)
            return SyncResult(runner.node.rank, "rsync", sent, time.monotonic() - started)
        sent = _copy_local(src, target)
        return SyncResult(runner.node.rank, "copy", sent, time.monotonic() - started)
    _make_target(runner, dst, is_dir)
    if rsync and node_has_rsync:
        remote = _remote_spec(runner, dst.rstrip("/") + ("/" if is_dir else ""))
        exact = [EXACT_TIMES] if exact_times(_about(rsync), node_rsync) else []
        argv = [rsync, *RSYNC_FLAGS, *exact, f"--timeout={IO_TIMEOUT}", *filters]
        argv += ["-e", ssh_command(runner, known_hosts), source, remote]
        sent = _rsync(runner, argv, src)
        return SyncResult(runner.node.rank, "rsync", sent, time.monotonic() - started)
    from skyform.exec.sftpsync import sftp_sync

    sent = sftp_sync(runner, src, dst)
    return SyncResult(runner.node.rank, "sftp", sent, time.monotonic() - started)


def _copy_local(src: Path, target: Path) -> int:
    if not src.is_dir():
        shutil.copy2(src, target)
        return 1
    dirs, files, links = walk(src)
    target.mkdir(parents=True, exist_ok=True)
    for rel in dirs:
        (target / rel).mkdir(exist_ok=True)
    sent = 0
    for rel in files:
        dest, origin = target / rel, src / rel
        st = origin.stat()
        try:
            cur = dest.stat()
            # copy2 keeps the nanoseconds: whole seconds would miss a same-second rewrite
            if cur.st_size == st.st_size and cur.st_mtime_ns == st.st_mtime_ns:
                continue
        except FileNotFoundError:
            pass
        shutil.copy2(origin, dest)
        sent += 1
    for rel in links:
        dest = target / rel
        if dest.is_symlink() or dest.exists():
            if dest.is_dir() and not dest.is_symlink():
                continue
            dest.unlink()
        os.symlink(os.readlink(src / rel), dest)
    return sent
