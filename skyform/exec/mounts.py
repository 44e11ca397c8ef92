"""File mounts for ssh and local nodes: local files and directories copied to every node.

Bucket URIs (s3://, gs://, ...) cannot be mounted on ssh or local nodes; that is refused
before anything is copied, naming the mount. Destinations: `~/x` or a relative path lands in
the node's home; absolute paths are allowed on ssh nodes but refused on local nodes, whose
whole filesystem is their directory. An absolute destination the node user cannot make
(`/data`: its parent is root's) is made with `sudo -n` and given to the user, as SkyPilot
does on VMs; `plan` refuses it on hosts where the user may not (stacks/sshdest.py).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from skyform.errors import ExecError
from skyform.plan.model import PlannedMount
from skyform.state.models import NodeKind

BUCKET = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)  # s3:// gs:// r2:// https:// ...


@dataclass(frozen=True)
class MountCopy:
    """One resolved mount: copy `source` (a local path) to `dst` on every node."""

    dst: str  # as the node sees it: "~/data", "/data"
    source: Path


def node_path(dst: str) -> str:
    """`~`-form for home-relative destinations, absolute stays absolute."""
    if dst.startswith("/") or dst.startswith("~/") or dst == "~":
        return dst.rstrip("/") or "/"
    return "~/" + dst.rstrip("/").removeprefix("./")


def shell_path(dst: str) -> str:
    """A node path (node_path's form) for a shell: `~/x` expands ($HOME), the rest is quoted."""
    if dst == "~":
        return '"$HOME"'
    if dst.startswith("~/"):
        return '"$HOME"/' + shlex.quote(dst[2:])
    return shlex.quote(dst)


def make_dir_command(dst: str) -> str:
    """Shell that makes the node directory `dst` (node_path's form) when it is missing. An
    absolute one the node user cannot make is made with `sudo -n` (no password asked) and
    owned by the user; a directory that exists is never changed."""
    where = shell_path(dst)
    if not dst.startswith("/"):
        return f"mkdir -p {where}"
    return (
        f"{{ [ -d {where} ] || mkdir -p {where} 2>/dev/null || "
        f'sudo -n install -d -o "$(id -u)" -g "$(id -g)" {where}; }}'
    )


def resolve_mounts(
    mounts: dict[str, PlannedMount],
    *,
    base_dir: Path,
    node_kind: NodeKind,
) -> list[MountCopy]:
    """Check every mount before copying any: buckets, missing sources, bad destinations."""
    copies = []
    for dst, mount in sorted(mounts.items()):
        source = mount.source.strip()
        if BUCKET.match(source):
            raise ExecError(
                f"file mount {dst}: {source} is a bucket, and buckets cannot be mounted on "
                f"{node_kind.value} nodes",
                hint="copy the data in `setup` (e.g. `aws s3 cp` / `gsutil cp`), or run the task "
                "on a cloud engine (aws, gcp, kubernetes)",
            )
        path = Path(source).expanduser()
        path = path if path.is_absolute() else (base_dir / path)
        if not path.exists():
            raise ExecError(
                f"file mount {dst}: source {path} does not exist",
                hint="paths in file_mounts are relative to the task file's directory",
            )
        where = node_path(dst)
        if node_kind is NodeKind.LOCAL and where.startswith("/"):
            raise ExecError(
                f"file mount {dst}: a local node is a directory on this machine, so it only "
                "takes destinations in its home",
                hint=f"use ~{dst} (the job sees it as $HOME{dst})",
            )
        if ".." in Path(where.removeprefix("~/")).parts:
            raise ExecError(f"file mount {dst}: the destination may not contain '..'")
        copies.append(MountCopy(where, path.resolve()))
    return copies
