"""Fencing tokens: the writes of a lease holder that lost its lease are refused.

A lease (leases.py) is a lock with an expiry. A holder can lose it without knowing: frozen
past its expiry, cut off from the database, or orphaned when the service that started it was
killed — and another holder then takes it. Each time a lease is taken anew its fencing token
goes up (the `fences` table, never reset). A process that acts under a lease — a managed
job's controller, `managed/<id>`; a service's controller can do the same with its own lease
— fences itself with the token it got (`fence_process`): from then on every write
transaction of every store it opens first checks, under the store's one write lock, that no
newer token exists, and raises errors.Fenced instead of writing. The check and the write are
one transaction, so no newer holder can slip in between.

A holder also learns of a lost lease from its renewer (lock.Renewer) and stops at its next
check (`raise_if_lost`), even when it has nothing to write for a while.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from skyform.errors import Fenced


class _Conn(Protocol):
    """The transaction's connection (sqlcore.Conn; not imported: sqlcore imports this)."""

    def execute(self, sql: str, args: Sequence[Any] = ...) -> Any: ...


@dataclass(frozen=True)
class Fence:
    name: str  # the lease acted under, e.g. managed/3
    token: int  # the fencing token it was taken with


_fence: Fence | None = None
_lost = threading.Event()


def fence_process(fence: Fence | None) -> None:
    """From now on, every write of this process is checked against `fence` (None: the
    process no longer acts under a lease)."""
    global _fence
    _fence = fence
    _lost.clear()


def active() -> Fence | None:
    return _fence


def check(conn: _Conn, fence: Fence) -> None:
    """Inside a write transaction: raise Fenced when the lease was taken anew since."""
    row = conn.execute("SELECT fence FROM fences WHERE name=?", (fence.name,)).fetchone()
    current = int(row["fence"]) if row is not None else 0
    if current > fence.token:
        _lost.set()
        raise Fenced(refused(fence, current))


def refused(fence: Fence, current: int | None = None) -> str:
    newer = f" (token {current} > {fence.token})" if current is not None else ""
    return (
        f"{fence.name} was taken by another holder{newer}: this process no longer acts "
        "under it, and stops without writing"
    )


def lose() -> None:
    """The renewer found the lease taken (or expired and gone): stop at the next check."""
    _lost.set()


def raise_if_lost() -> None:
    fence = _fence
    if fence is not None and _lost.is_set():
        raise Fenced(refused(fence))
