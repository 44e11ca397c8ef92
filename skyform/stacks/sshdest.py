"""Absolute file-mount destinations (`/data`, SkyPilot's most common form) on ssh pool hosts:
can the node user make them? Asked at `plan` and again at `apply` before anything is
reserved or created, so a destination that cannot be made is refused with the reason rather
than failing on the hosts after they were reserved and the buckets made.

A destination is fine when it is a directory the node user can write, or when it is missing
and the user can make it: itself (its nearest existing parent is writable) or with `sudo -n`
(passwordless sudo; it is then made and owned by the user, exec/mounts.py). A directory that
exists and is not the user's to write is never changed: refused.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from skyform.config import Config
from skyform.errors import ExecError
from skyform.exec.runner import Timeouts
from skyform.plan.model import JobSpec, TaskPlacement
from skyform.state.models import NodeHandle

PROBE = Timeouts(connect=5.0, banner=5.0, auth=5.0, channel=5.0, command=20.0)
HINT = (
    "Let the node user sudo without a password on those hosts (a sudoers.d drop-in: "
    "`USER ALL=(ALL) NOPASSWD: ALL`), make the directory theirs, or use a destination in "
    "the node user's home (~/data)."
)

# Per directory: `INDEX ok` (writable, or can be made), `INDEX sudo` (made with sudo -n),
# `INDEX nosudo PARENT` (cannot be made), `INDEX taken` (exists, not the user's to write).
_CHECK = """sky_check() {
  if [ -e "$1" ]; then
    if [ -d "$1" ] && [ -w "$1" ]; then echo "$2 ok"; else echo "$2 taken"; fi; return
  fi
  a=$1; while [ ! -e "$a" ]; do a=$(dirname "$a"); done
  if [ -w "$a" ]; then echo "$2 ok"
  elif sudo -n true >/dev/null 2>&1; then echo "$2 sudo"
  else echo "$2 nosudo $a"; fi
}
"""


@dataclass(frozen=True)
class DestinationProblem:
    task: TaskPlacement
    mount: str  # the file_mounts key
    host: str  # the pool host's id
    why: str


def destination_dirs(job: JobSpec, task_dir: Path) -> dict[str, str]:
    """file_mounts key -> the absolute directory a mount writes into on a node: its
    destination, or for a single local file, the destination's folder."""
    from skyform.exec.mounts import node_path

    found = {}
    for dst, mount in sorted(job.file_mounts.items()):
        where = node_path(dst)
        if not where.startswith("/") or "${" in where:
            continue
        if mount.bucket is None:
            source = Path(mount.source).expanduser()
            source = source if source.is_absolute() else task_dir / source
            if source.exists() and not source.is_dir():
                where = posixpath.dirname(where) or "/"
        found[dst] = where
    return found


def destination_problems(
    tasks: Iterable[TaskPlacement], config: Config, reserved: Mapping[str, str], task_dir: Path
) -> list[DestinationProblem]:
    """What keeps each ssh-placed task's absolute destinations from being made, on every host
    of its pool that the cluster could be given (a host that does not answer is skipped:
    it would not be reserved either)."""
    from skyform.plan.catalog.hostfacts import read_facts
    from skyform.plan.catalog.onprem import host_id
    from skyform.stacks.sshnodes import pool_node
    from skyform.stacks.sshpool import host_matches

    asks: list[tuple[TaskPlacement, dict[str, str], str, NodeHandle]] = []
    facts = read_facts()
    for task in tasks:
        dirs = destination_dirs(task.job, task_dir)
        pool = config.ssh_pools.get(task.offer.context or "")
        if task.offer.cloud != "ssh" or not dirs or pool is None:
            continue
        name = task.offer.context or ""
        for host in pool.hosts:
            node_id = host_id(name, pool, host)
            if reserved.get(node_id) in (None, task.cluster) and host_matches(
                name, pool, host, task.offer, facts
            ):
                asks.append((task, dirs, node_id, pool_node(0, node_id, host, pool)))
    if not asks:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(asks))) as ex:
        answers = list(ex.map(lambda ask: _ask(ask[3], list(ask[1].values())), asks))
    problems = []
    for (task, dirs, node_id, node), verdicts in zip(asks, answers, strict=True):
        for (mount, where), verdict in zip(dirs.items(), verdicts, strict=True):
            why = _why(where, verdict, node.user or "the node user")
            if why:
                problems.append(DestinationProblem(task, mount, node_id, why))
    return problems


def _ask(node: NodeHandle, dirs: list[str]) -> list[str]:
    """One verdict per directory (`ok` for all when the host does not answer)."""
    from skyform.exec.connect import open_runner

    script = _CHECK + "".join(f"sky_check {shlex.quote(d)} {i}\n" for i, d in enumerate(dirs))
    try:
        runner = open_runner(node, timeouts=PROBE)
        try:
            out = runner.run(script).stdout
        finally:
            runner.close()
    except ExecError:
        return ["ok"] * len(dirs)
    verdicts = ["ok"] * len(dirs)
    for line in out.splitlines():
        index, _, verdict = line.partition(" ")
        if index.isdigit() and int(index) < len(dirs):
            verdicts[int(index)] = verdict
    return verdicts


def _why(where: str, verdict: str, user: str) -> str | None:
    if verdict.startswith("nosudo"):
        parent = verdict.partition(" ")[2] or "its parent"
        return (
            f"{where} needs root to be made ({parent} is not {user}'s to write) and {user} "
            "may not sudo without a password"
        )
    if verdict == "taken":
        return (
            f"{where} exists and {user} cannot write it (skyform does not change a "
            "directory it did not make)"
        )
    return None


def describe(problems: list[DestinationProblem], limit: int = 4) -> str:
    lines = [f"file mount {p.mount} of task {p.task.task!r} on {p.host}: {p.why}" for p in problems]
    more = len(lines) - limit
    return "; ".join(lines[:limit]) + (f"; and {more} more" if more > 0 else "")
