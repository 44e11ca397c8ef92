"""`skyform down`: which clusters to tear down, and tearing one down under its lock.

`down -a` takes every cluster except those a managed job runs on (they belong to its
controller: `jobs cancel` takes them down), and says which it left. Naming such a cluster
is refused. `--purge` forgets a cluster whose infra cannot be torn down, after saying what
may be left (lifecycle/clusters.destroy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from skyform.config import Config
from skyform.errors import DamagedRecordError, SkyformError
from skyform.lifecycle import clusters
from skyform.state.db import StateDB
from skyform.state.models import ClusterRecord


@dataclass(frozen=True)
class DownTargets:
    records: list[ClusterRecord]
    kept: list[str]  # why a cluster `-a` would have taken is left up
    # named with --purge, whose records cannot be read: forgotten by name (forget_damaged)
    damaged: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.records] + self.damaged


def down_targets(db: StateDB, names: list[str], *, every: bool, purge: bool = False) -> DownTargets:
    from skyform.ops.managed.cancel import managed_owner_note, refuse_managed_clusters

    if every and names:
        raise SkyformError("name clusters or pass -a/--all, not both")
    if not every and not names:
        raise SkyformError("say which clusters to tear down", "Name them, or pass -a/--all.")
    if not every:
        records, damaged = [], []
        for name in dict.fromkeys(names):
            try:
                records.append(db.require_cluster(name))
            except DamagedRecordError:
                if not purge:
                    raise
                damaged.append(name)
        refuse_managed_clusters(db, [r.name for r in records] + damaged)
        return DownTargets(records, [], damaged)
    records, kept = [], []
    for record in db.list_clusters():
        note = managed_owner_note(db, record.name)
        if note is None:
            records.append(record)
        else:
            kept.append(note)
    return DownTargets(records, kept)


def take_down(
    db: StateDB, config: Config, name: str, *, purge: bool, emit: Callable[[str], None]
) -> str | None:
    """Tear one cluster down under its lock; what a purge left behind, if anything."""
    from skyform.ops.managed.cancel import refuse_managed_clusters
    from skyform.state.lock import cluster_lock

    with cluster_lock(name, purpose=f"skyform down {name}"):
        refuse_managed_clusters(db, [name])  # a managed job launched on it since the prompt
        current = db.require_cluster(name)
        return clusters.destroy(db, config, current, reason="skyform down", emit=emit, purge=purge)


def forget_damaged(db: StateDB, name: str, *, emit: Callable[[str], None]) -> str:
    """`down --purge NAME` of a cluster whose record cannot be read: it is forgotten by
    name (its hosts released, its usage closed, its jobs and keys dropped) under its lock;
    what it made cannot be known from the record, so the user is told to look."""
    from skyform.ops.managed.cancel import refuse_managed_clusters
    from skyform.state.lock import cluster_lock

    with cluster_lock(name, purpose=f"skyform down --purge {name}"):
        refuse_managed_clusters(db, [name])
        left = (
            "its state record is damaged, so what it made is unknown: check its infra "
            "(node directories under SKYFORM_HOME/local, ssh hosts, a Pulumi stack "
            f"skyform/{name}) by hand"
        )
        emit(left)
        clusters.forget(db, name, "cluster.purged", f"skyform down --purge: {left}")
        return left
