"""What a Pulumi run killed half-way (`kill -9`, a lost machine) leaves in its stack, and how
skyform settles it so that the next command goes through instead of failing for ever:

- **its lock.** A self-managed backend (`file://`, `postgres://`) locks a stack with a lock
  file naming its holder (`user@host (pid N)`); a killed run never removes it, and every
  later update fails with "the stack is currently locked". When every holder ran on this
  machine and is gone (no such process, or no longer a `pulumi` one), the lock is released
  (`pulumi cancel`) and the operation runs again; a live holder, or one on another machine,
  is reported (errors.py: skyform's lock error).
- **its pending creates.** Resources the run had asked the cloud for but not yet recorded
  (a Pod waiting to be Ready, a Service waiting for endpoints) stay in the checkpoint's
  `pending_operations`; the engine then drops them, so the objects exist in the cloud but
  not in the stack: `destroy` would leave them behind. Where the cloud names an object by
  its inputs (Kubernetes: namespace/name) it is recorded in the stack as made, so a refresh
  reads it (or drops it if it was never made) and a destroy deletes it. Others are left to
  the engine, which warns about them.

Works on the engine's text and plain deployment dicts; the Automation API stays in
workspace.py.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_HOLDER = re.compile(r"created by (?P<user>\S+)@(?P<host>\S+) \(pid (?P<pid>\d+)\) at (?P<at>\S+)")


@dataclass(frozen=True)
class LockHolder:
    user: str
    host: str
    pid: int
    since: str  # as the engine wrote it (RFC 3339)

    def __str__(self) -> str:
        return f"pulumi process {self.pid} of {self.user}@{self.host} (since {self.since})"


def lock_holders(text: str) -> list[LockHolder]:
    """The holders a "the stack is currently locked" error names (self-managed backends)."""
    return [
        LockHolder(m["user"], m["host"], int(m["pid"]), m["at"]) for m in _HOLDER.finditer(text)
    ]


def holder_gone(holder: LockHolder, host: str | None = None) -> bool:
    """The holder ran on this machine and no longer runs: no such process, or one that is
    not `pulumi` (its pid reused), or a killed one not yet reaped. Another machine's holder
    is never taken for gone: skyform cannot tell."""
    if holder.host != (host or socket.gethostname()):
        return False
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # another user's live process
    proc = Path(f"/proc/{holder.pid}")
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False  # no /proc here: cannot tell, so alive
    if state in ("Z", "X"):
        return True  # killed, not yet reaped
    try:
        return not os.path.basename(os.readlink(proc / "exe")).startswith("pulumi")
    except OSError:
        return False  # cannot tell: alive


def stale(holders: list[LockHolder]) -> bool:
    return bool(holders) and all(holder_gone(h) for h in holders)


ObjectId = Callable[[Mapping[str, Any]], "str | None"]


def adopt_pending_creates(deployment: dict, object_id: ObjectId) -> list[str]:
    """Record, in `deployment` (a stack export's `deployment`), the pending creates whose
    id `object_id` can tell from their inputs, as made (outputs = inputs until a refresh
    reads them); the names of those adopted ("ssh-0 (kubernetes:core/v1:Service)")."""
    kept: list = []
    adopted: list[dict] = []
    for op in deployment.get("pending_operations") or []:
        resource = op.get("resource") if isinstance(op, dict) else None
        if not isinstance(resource, dict) or op.get("type") != "creating":
            kept.append(op)
            continue
        made = object_id(resource)
        if made is None:
            kept.append(op)
            continue
        adopted.append(dict(resource, id=made, outputs=resource.get("inputs") or {}))
    if adopted:
        deployment["resources"] = [*(deployment.get("resources") or []), *adopted]
        deployment["pending_operations"] = kept
    return [f"{r['urn'].rsplit('::', 1)[-1]} ({r.get('type')})" for r in adopted]
