"""The cluster verbs' use cases: `status` (with what autostop did, and engine health on
--refresh) and `down` (which clusters, then each under its lock: ops/down.py).

Light at import: `status` on a fresh machine answers from `has_state()` without loading a
model; everything else is imported when it is used.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from skyform.state.store import state_exists

if TYPE_CHECKING:
    from skyform.stacks.engine import ClusterState
    from skyform.state.models import ClusterRecord, JobRecord
    from skyform.state.rows import ClusterRow


def has_state() -> bool:
    """False on a fresh machine: no cluster was ever recorded here."""
    return state_exists()


def shown_names() -> dict[str, str]:
    """Each cluster typed as a name the engines cannot take (`-c my_cluster`) by that name,
    keyed by its engine-safe one (`my-cluster`): what every message shows."""
    if not state_exists():
        return {}
    from skyform.errors import SkyformError
    from skyform.state.db import open_state

    try:
        with open_state() as db:
            return db.shown_names()
    except SkyformError:  # a damaged store: the verb itself says so
        return {}


@dataclass(frozen=True)
class StatusView:
    records: list[ClusterRecord]
    jobs: dict[str, list[JobRecord]]
    health: dict[str, ClusterState] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what autostop did since the last look


def plain_status() -> list[ClusterRow] | None:
    """Every cluster as plain `status` shows it, read without the models (a thousand
    clusters on PostgreSQL: ~0.1 s less); None when a record needs them (an autostop to
    converge, a record this version did not write): then `cluster_status`."""
    from skyform.state.db import open_state

    with open_state() as db:
        return db.cluster_rows()


def cluster_status(names: list[str], *, refresh: bool, with_jobs: bool = True) -> StatusView:
    """The named clusters (default: all), after converging on what their autostop agents
    did; with `refresh`, each engine is asked whether the nodes are still alive."""
    from skyform.config import load_config
    from skyform.state.db import open_state

    with open_state() as db:
        records = [db.require_cluster(n) for n in names] if names else db.list_clusters()
        health: dict[str, ClusterState] = {}
        notes: list[str] = []
        if any(r.spec.autostop for r in records):
            from skyform.ops.autostop import converge_all

            records, notes = converge_all(
                db, load_config(), records, remote=refresh, emit=lambda _m: None
            )
        if refresh:
            from skyform.stacks.registry import engine_for

            config = load_config()
            for index, r in enumerate(records):
                if r.handle is not None:
                    engine = engine_for(r.spec.offer.cloud, config=config, state=db)
                    health[r.name] = state = engine.refresh(r.handle)
                    if state.gone:
                        records[index] = _record_lost(db, r, state)
        jobs = _jobs_by_cluster(db, [r.name for r in records], every=not names) if with_jobs else {}
    return StatusView(records, jobs, health, notes)


def _record_lost(db, record: ClusterRecord, state: ClusterState) -> ClusterRecord:
    """An UP cluster whose infra no longer has some of its nodes is recorded LOST, so a
    plain `status` says so and the next plan replaces it. A managed job's cluster is its
    controller's to judge; one another command holds is left as it is."""
    from skyform.errors import LockedError
    from skyform.lifecycle.clusters import mark_lost
    from skyform.state.lock import cluster_lock
    from skyform.state.managed import ManagedJobs
    from skyform.state.models import ClusterStatus

    if record.status is not ClusterStatus.UP or ManagedJobs(db).owner_of(record.name):
        return record
    why = "; ".join(f"node {n.rank}: {n.detail}" for n in state.gone) + " (status --refresh)"
    try:
        with cluster_lock(record.name, wait=0, purpose=f"skyform status --refresh {record.name}"):
            current = db.get_cluster(record.name)
            if current is None or current.status is not ClusterStatus.UP:
                return current or record
            if current.handle != record.handle:  # re-made meanwhile: not what was refreshed
                return current
            return mark_lost(db, current, why)
    except LockedError:
        return record


def _jobs_by_cluster(db, names: list[str], *, every: bool) -> dict:
    """One query for every cluster's jobs (a thousand clusters: not a thousand queries)."""
    if not every:
        return {name: db.list_jobs(name) for name in names}
    grouped: dict = {name: [] for name in names}
    for job in db.list_jobs():
        grouped.setdefault(job.cluster, []).append(job)
    return grouped


@dataclass(frozen=True)
class DownReport:
    """How `down` tells its progress; the CLI renders it."""

    kept: Callable[[list[str]], None]  # clusters -a leaves up, and why
    confirm: Callable[[list[str]], None]  # raises to abort before anything is torn down
    stage: Callable[[str, str, str], None]  # cluster, stage, detail
    event: Callable[[str, str], None]  # cluster, message


def down_clusters(names: list[str], *, every: bool, purge: bool, report: DownReport) -> list[str]:
    """Tear down the named clusters (or every one a managed job does not own); the names
    torn down, in order. Nothing is touched before `report.confirm` returns."""
    from skyform.config import load_config
    from skyform.ops.down import down_targets, forget_damaged, take_down
    from skyform.state.db import open_state

    config = load_config()
    with open_state() as db:
        targets = down_targets(db, names, every=every, purge=purge)
        report.kept(targets.kept)
        chosen = targets.names
        if not chosen:
            return []
        report.confirm(chosen)
        for name in chosen:
            if name in targets.damaged:
                report.stage(name, "destroy", "unknown (damaged record)")
                forget_damaged(db, name, emit=functools.partial(report.event, name))
                report.stage(name, "down", "purged from state")
                continue
            record = db.require_cluster(name)
            report.stage(name, "destroy", record.spec.offer.infra)
            emit = functools.partial(report.event, name)
            left = take_down(db, config, name, purge=purge, emit=emit)
            report.stage(name, "down", "purged from state" if left else "terminated")
    return chosen
