"""Use cases on the state store itself: free a cluster's lock, move the state to another store."""

from __future__ import annotations

from dataclasses import dataclass

from skyform.state.leases import Lease
from skyform.state.lock import cluster_lease
from skyform.state.migrate import copy_state
from skyform.state.store import open_state


def cluster_lock(cluster: str) -> Lease | None:
    """The lease that locks `cluster` now, or None when nobody holds it."""
    with open_state() as db:
        return db.get_lease(cluster_lease(cluster))


def force_unlock(cluster: str) -> None:
    with open_state() as db:
        db.force_unlock(cluster_lease(cluster))


@dataclass(frozen=True)
class Migrated:
    source: str  # URLs without passwords
    target: str
    copied: dict[str, int]  # table -> rows copied


def migrate(to: str, source: str | None = None) -> Migrated:
    """Copy this command's state (or `source`) into the empty store at `to`."""
    with open_state(url=source) as old, open_state(url=to) as new:
        copied = copy_state(old, new)
        return Migrated(source=old.url, target=new.url, copied=dict(copied))
