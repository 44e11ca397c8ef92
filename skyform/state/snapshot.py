"""A read-only view of state for planning: lineage, serial and the clusters as the diff sees them.

Planning never creates SKYFORM_HOME or the database: with no state yet, the snapshot is empty
(lineage None, serial 0) and a plan made from it applies to a fresh state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from skyform.plan.diff import SETUP_FAILED, CurrentCluster
from skyform.plan.model import Prior

# The database modules are loaded only when there is a database: planning on a fresh machine
# (CI, a new checkout) starts without them.
if TYPE_CHECKING:
    from skyform.state.db import StateDB
    from skyform.state.models import ClusterHandle, ClusterRecord

# Has the infra dropped a cluster's nodes behind skyform's back? The engines answer
# (stacks.registry.nodes_gone); state does not know them, so the caller passes it in.
NodesGone = Callable[["ClusterHandle"], bool]


@dataclass(frozen=True)
class StateSnapshot:
    lineage: str | None = None
    serial: int = 0
    clusters: dict[str, CurrentCluster] = field(default_factory=dict)
    reserved: dict[str, str] = field(default_factory=dict)  # ssh host id -> cluster holding it

    @property
    def prior(self) -> Prior:
        return Prior(lineage=self.lineage, serial=self.serial)


def _status(record: ClusterRecord, gone: NodesGone) -> str:
    """The recorded status, unless the cluster's engine says its nodes are gone, or its
    setup never completed (the diff's SETUP_FAILED: applying again runs it again)."""
    from skyform.state.models import ClusterStatus

    if record.handle is not None and gone(record.handle):
        return "GONE"
    if record.status is ClusterStatus.UP and record.setup_done != record.spec.setup_digest:
        return SETUP_FAILED
    return record.status.value


def snapshot_of(db: StateDB, gone: NodesGone) -> StateSnapshot:
    from skyform.state.managed import ManagedJobs

    # The serial first: a change landing while the clusters are read is then newer than the
    # plan's serial, so the plan is refused as stale, never wrongly taken as fresh.
    lineage, serial = db.lineage, db.serial
    jobs = ManagedJobs(db)

    def managed_job(name: str) -> int | None:
        owner = jobs.owner_of(name)
        return owner.id if owner is not None else None

    clusters = {
        r.name: CurrentCluster(
            spec=r.spec,
            status=_status(r, gone),
            source=r.source,
            managed_job=managed_job(r.name),
            job=r.job,
            workdir_files=r.workdir_files,
        )
        for r in db.list_clusters()
    }
    return StateSnapshot(
        lineage=lineage, serial=serial, clusters=clusters, reserved=db.taken_nodes()
    )


def read_snapshot(gone: NodesGone) -> StateSnapshot:
    from skyform.state.store import open_state, state_exists

    if not state_exists():
        return StateSnapshot()
    with open_state() as db:
        return snapshot_of(db, gone)
