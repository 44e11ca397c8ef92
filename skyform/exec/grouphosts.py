"""Names of a job group on its nodes: every node of every task resolves
`<task>-<rank>.<group>` to that node's address, as SkyPilot's job groups promise.

SkyPilot appends the names to /etc/hosts with sudo. skyform does the same where the node user
is root or has passwordless sudo on a machine of its own; elsewhere (a pool host where skyform
logs in as a plain user, and `local` nodes, which are this machine: its /etc/hosts is not ours
to change) the names go into a file of the node user's, which libnss_wrapper (Debian/Ubuntu
`libnss-wrapper`, Fedora `nss_wrapper`) answers from: NSS_WRAPPER_HOSTS + LD_PRELOAD, set by a
file the job sources before its script (`source_line`). Names it does not list still resolve
as before (the wrapper falls through to the system's resolver), and a rewritten file is read
again by running processes, so a recovered task's new address reaches the others.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from skyform.exec.node_jobs import NODE_BASE
from skyform.exec.runner import NodeRunner
from skyform.exec.templating import render
from skyform.plan.model import member_host
from skyform.state.models import ClusterHandle, NodeKind

SYSTEM_HOSTS = "/etc/hosts"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class HostEntry:
    ip: str
    name: str


@dataclass(frozen=True)
class Installed:
    """How the names reached one node: "hosts" (/etc/hosts), "nss" (libnss_wrapper) or
    "none" (neither is possible there; `detail` says why)."""

    mode: str
    detail: str = ""


def entries(group: str, members: Iterable[tuple[str, ClusterHandle]]) -> list[HostEntry]:
    """One entry per node of every task (task name, its cluster), in task then rank order."""
    out = []
    for task, cluster in members:
        for node in sorted(cluster.nodes, key=lambda n: n.rank):
            out.append(HostEntry(node.ip, member_host(task, node.rank, group)))
    return out


def group_key(job_id: int, group: str) -> str:
    """The node files' name for one managed job's group (two jobs may share a group name)."""
    return f"{job_id}-{_UNSAFE.sub('-', group).strip('-.') or 'group'}"


def env_file(key: str) -> str:
    return f"$HOME/{NODE_BASE}/jobgroups/{key}.env"


def source_line(key: str) -> str:
    """The line put before a group task's setup and run: the wrapper's settings, if any."""
    path = f'"{env_file(key)}"'
    return f"if [ -f {path} ]; then . {path}; fi\n"


@cache
def _script() -> str:
    return render("jobgroup_hosts.sh.j2", base=NODE_BASE)


def install(
    runner: NodeRunner,
    key: str,
    group: str,
    names: list[HostEntry],
    *,
    system_hosts: str = SYSTEM_HOSTS,
    own_machine: bool | None = None,
) -> Installed:
    """Make `names` resolve on the runner's node (idempotent: the group's previous entries
    are replaced). `own_machine` (default: any node but a `local` one) allows writing
    `system_hosts` when the node user may."""
    if own_machine is None:
        own_machine = runner.node.kind is not NodeKind.LOCAL
    system = "1" if own_machine else "0"
    args = " ".join(shlex.quote(a) for a in (key, group, system, system_hosts))
    lines = "".join(f"{e.ip} {e.name}\n" for e in names)
    result = runner.check(f"bash -c {shlex.quote(_script())} _ {args}", stdin=lines)
    answer = result.stdout.strip().splitlines()
    words = (answer[-1] if answer else "").split(" ", 2)
    if len(words) < 2 or words[0] != "mode":
        return Installed("none", f"unexpected answer: {result.stdout.strip()[:200]!r}")
    return Installed(words[1], words[2] if len(words) > 2 else "")
