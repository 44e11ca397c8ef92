"""The SFTP fallback of a sync, for when rsync is missing here or on the node.

Same files as rsync would send (skyform.exec.ignore mirrors its filters); files whose size and
mtime already match on the node are skipped, so a re-sync sends only what changed. Modes and
mtimes are kept, symlinks are recreated, nothing is deleted. SFTP (v3) sets whole seconds
only, so here a file rewritten at its size within the second of the version sent before is
still taken as unchanged (rsync and the local copy compare nanoseconds: exec.sync).
"""

from __future__ import annotations

import posixpath
import shlex
from pathlib import Path

from skyform.errors import ExecError
from skyform.exec.ignore import walk
from skyform.exec.runner import NodeRunner


def _shell_path(dst: str) -> str:
    if dst in ("~", ""):
        return '"$HOME"'
    return '"$HOME"/' + shlex.quote(dst[2:]) if dst.startswith("~/") else shlex.quote(dst)


def remote_listing(runner: NodeRunner, dst: str) -> dict[str, tuple[str, int, int]]:
    """rel path -> (type f/d/l, size, mtime) of what already is under `dst` on the node."""
    cmd = f"cd {_shell_path(dst)} 2>/dev/null && find . -mindepth 1 -printf '%y\\t%s\\t%T@\\t%P\\0'"
    result = runner.run(cmd)
    listing = {}
    for record in result.raw_stdout.split(b"\0"):
        parts = record.decode(errors="surrogateescape").split("\t", 3)
        if len(parts) == 4:
            kind, size, mtime, rel = parts
            listing[rel] = (kind, int(size), int(float(mtime)))
    return listing


def sftp_sync(runner: NodeRunner, src: Path, dst: str) -> int:
    """Returns how many regular files were sent."""
    from skyform.exec.keeperclient import direct_runner
    from skyform.exec.ssh import SSHRunner

    runner = direct_runner(runner)  # SFTP: on a connection of our own, not the keeper's
    assert isinstance(runner, SSHRunner)
    sftp = runner.sftp()
    root = runner.sftp_path(dst.rstrip("/") or dst)
    try:
        if not src.is_dir():
            runner.makedirs(posixpath.dirname(root) or ".")
            _put(sftp, src, root)
            return 1
        dirs, files, links = walk(src)
        have = remote_listing(runner, dst)
        runner.makedirs(root)
        for rel in dirs:
            if have.get(rel, ("",))[0] != "d":
                sftp.mkdir(posixpath.join(root, rel))
        sent = 0
        for rel in files:
            st = (src / rel).stat()
            if have.get(rel) == ("f", st.st_size, int(st.st_mtime)):
                continue
            _put(sftp, src / rel, posixpath.join(root, rel))
            sent += 1
        for rel in links:
            remote = posixpath.join(root, rel)
            if rel in have:
                sftp.remove(remote)
            sftp.symlink(str((src / rel).readlink()), remote)
        return sent
    except OSError as exc:
        raise ExecError(
            f"{runner.label}: SFTP copy of {src} to {dst} failed: {exc.strerror or exc}",
            hint="check free disk space and permissions on the node",
        ) from None


def _put(sftp, local: Path, remote: str) -> None:
    st = local.stat()
    sftp.put(str(local), remote, confirm=False)
    sftp.chmod(remote, st.st_mode & 0o7777)
    sftp.utime(remote, (st.st_atime, st.st_mtime))
