"""Cluster lifecycle with state bookkeeping: provision, mark up, record stopped, destroy.

Each step writes state before and after the engine acts, so a process killed at any point
leaves a record a second apply can converge from: an INIT cluster is resumed (its engine
brings it up again keeping what exists), reserved hosts are reused or released, usage
intervals are closed when the cluster goes away. A provisioning that made nothing leaves no
record.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from skyform.config import Config
from skyform.errors import NodeUnreachable, SkyformError, StackError
from skyform.exec.keeperclient import stop_keepers
from skyform.infra import is_on_prem
from skyform.plan.model import ClusterSpec
from skyform.stacks.registry import engine_for
from skyform.state.db import StateDB
from skyform.state.models import ClusterHandle, ClusterRecord, ClusterStatus

Emit = Callable[[str], None]


def _event(db: StateDB, kind: str, cluster: str, message: str, **data) -> None:
    db.add_event(kind, message, cluster=cluster, data={"serial": db.serial, **data})


def _recorded(
    db: StateDB, record: ClusterRecord, update: dict, kind: str, message: str
) -> ClusterRecord:
    """The record with `update` applied, written to state with its event."""
    record = record.model_copy(update=update)
    db.put_cluster(record)
    _event(db, kind, record.name, message)
    return record


def provision(
    db: StateDB,
    config: Config,
    spec: ClusterSpec,
    *,
    source: str | None,
    plan_digest: str | None,
    emit: Emit,
    managed_job_id: int | None = None,
    reason: str = "apply",
    keep: ClusterHandle | None = None,
) -> ClusterRecord:
    """Record the cluster as INIT, bring it up through its engine, record the handle.

    `keep`: the nodes of a salvaged or resumed cluster (see `salvage`, `resume`), recorded
    as the cluster's while the engine runs, so an ssh pool reuses the ones that still answer
    before reserving more. An engine that fails before making anything (it cannot load, no
    capacity, credentials missing) leaves the state as it was: no record of a cluster that
    never existed, and a cluster that was there before is recorded as it was.
    """
    engine = engine_for(spec.offer.cloud, config=config, state=db, plan_digest=plan_digest)
    before = db.get_cluster(spec.name)
    record = ClusterRecord(
        name=spec.name,
        status=ClusterStatus.INIT,
        spec=spec,
        source=source,
        hourly_price=spec.offer.hourly_price,
        plan_digest=plan_digest,
        handle=keep,
    )
    db.put_cluster(record)
    _event(db, "cluster.provisioning", spec.name, f"provisioning on {spec.offer.infra}")
    try:
        handle = engine.up(spec, emit)
    except StackError as err:
        if err.nothing_made:
            _as_before(db, spec.name, before, err.message)
        raise
    record = record.model_copy(update={"handle": handle, "launched_at": time.time()})
    db.put_cluster(record)
    db.open_usage(record, managed_job_id=managed_job_id, reason=reason)
    _event(
        db, "cluster.provisioned", spec.name, f"{len(handle.nodes)} node(s) up on {handle.infra}"
    )
    return record


def _as_before(db: StateDB, name: str, before: ClusterRecord | None, why: str) -> None:
    """Undo the INIT record of a provisioning that made nothing."""
    db.release_nodes(name)  # hosts an ssh pool reserved on the way
    if before is None:
        db.delete_cluster(name)
    else:
        db.put_cluster(before)
    _event(db, "cluster.refused", name, f"nothing was made: {why}")


def resume(
    db: StateDB,
    config: Config,
    record: ClusterRecord,
    spec: ClusterSpec,
    *,
    source: str | None,
    plan_digest: str | None,
    emit: Emit,
) -> ClusterRecord:
    """Carry on with a cluster whose last apply did not finish (INIT): its engine brings it
    up again keeping what exists — local node directories stay, an ssh pool keeps the hosts
    that still answer (replacing the others), a Pulumi stack converges — so setup can run
    again without provisioning from scratch."""
    if record.handle is None:
        db.release_nodes(record.name)  # reserved, never recorded: reserved and cleaned again
    db.close_usage(record.name)
    kept = f"keeping its {len(record.handle.nodes)} node(s)" if record.handle else "again"
    emit(f"the last apply did not finish: provisioning {kept}")
    return provision(
        db,
        config,
        spec,
        source=source,
        plan_digest=plan_digest,
        emit=emit,
        reason="resume",
        keep=record.handle,
    )


def can_salvage(record: ClusterRecord, spec: ClusterSpec) -> bool:
    """A lost cluster whose replacement is planned on the same pool group and size: its
    surviving nodes can stay (on-prem infra only; a cloud replaces instances through its
    stack)."""
    return (
        record.handle is not None
        and is_on_prem(record.spec.offer.cloud)
        and record.spec.offer == spec.offer
        and record.spec.num_nodes == spec.num_nodes
    )


def salvage(db: StateDB, record: ClusterRecord, *, emit: Emit) -> ClusterHandle:
    """Stop the lost cluster's jobs on the nodes that still answer and keep those nodes with
    what is on them (a finished setup is not run again there); only lost nodes get replaced."""
    from skyform.exec.teardown import kill_jobs

    assert record.handle is not None
    kept = []
    for node in record.handle.nodes:
        try:
            emit(f"node {node.rank}: {kill_jobs(node)}; kept")
            kept.append(node.rank)
        except NodeUnreachable as err:
            emit(f"node {node.rank}: lost ({err.message}); to be replaced")
    db.close_usage(record.name)
    _event(
        db,
        "cluster.salvaged",
        record.name,
        f"kept node(s) {', '.join(map(str, kept)) or 'none'}; replacing the others",
    )
    return record.handle


def mark_up(db: StateDB, record: ClusterRecord, *, setup_done: str | None) -> ClusterRecord:
    update = {"status": ClusterStatus.UP, "setup_done": setup_done}
    return _recorded(db, record, update, "cluster.up", "cluster is up")


def record_stopped(
    db: StateDB,
    config: Config,
    record: ClusterRecord,
    *,
    emit: Emit,
    reason: str,
    last_active: float | None = None,
    stopped_at: float | None = None,
) -> ClusterRecord:
    """Stop what still runs (per engine) and record the cluster STOPPED; `last_active` is
    when it was last busy (default: now, for a stop by hand), `stopped_at` when the node
    stopped (an autostop: its agent's time; default: now), where its billed uptime ends."""
    from skyform.infra import Stop, infra
    from skyform.lifecycle.bucketmounts import park_buckets

    assert record.handle is not None
    row = infra(record.spec.offer.cloud)
    machines_stop = row is not None and row.stop is Stop.INSTANCES
    if machines_stop:  # while the machines still run: what the cache holds reaches the bucket
        park_buckets(record, emit=emit)
    stop_keepers(record.name)  # a stopped cluster's SSH connections are not kept
    # The plan the cluster was applied with: its resources keep the tags that name it.
    engine = engine_for(
        record.spec.offer.cloud, config=config, state=db, plan_digest=record.plan_digest
    )
    engine.stop(record.spec, record.handle, emit)
    if not machines_stop:  # the jobs have ended: nothing writes to the mounts any more
        park_buckets(record, emit=emit)
    now = time.time()
    update = {
        "status": ClusterStatus.STOPPED,
        "stopped_at": stopped_at or now,
        "last_active_at": last_active or now,
    }
    stopped = record.model_copy(update=update)
    db.put_cluster(stopped)
    db.close_usage(record.name, ended_at=stopped_at)
    db.add_event("cluster.stopped", reason, cluster=record.name)
    return stopped


def mark_lost(db: StateDB, record: ClusterRecord, why: str) -> ClusterRecord:
    """The infra no longer has some of the cluster's nodes: LOST, which the next plan
    replaces (plan/diff.py)."""
    return _recorded(db, record, {"status": ClusterStatus.LOST}, "cluster.lost", why)


def update_spec(
    db: StateDB,
    record: ClusterRecord,
    spec: ClusterSpec,
    plan_digest: str | None,
    *,
    source: str | None = None,
) -> ClusterRecord:
    """An in-place update: the cluster keeps its nodes, the record takes the new spec (and
    `source`, the task file it now belongs to)."""
    update: dict = {"spec": spec, "plan_digest": plan_digest}
    if source is not None:
        update["source"] = source
    return _recorded(db, record, update, "cluster.updated", "cluster updated in place")


def destroy(
    db: StateDB,
    config: Config,
    record: ClusterRecord,
    *,
    reason: str,
    emit: Emit,
    purge: bool = False,
    ended_at: float | None = None,
) -> str | None:
    """Tear the cluster down through its engine (if it got that far) and forget it. A record
    of a cluster that has nothing (no nodes recorded, no resources in its stack) is forgotten
    even where its engine cannot load (e.g. left by an apply that failed on a missing SDK).

    With `purge` (`down --purge`), a cluster its engine cannot tear down (infra unreachable,
    SDK or CLI missing) is forgotten anyway; returns what may be left behind, in words, for the
    user to clean up by hand (None when nothing was). `ended_at`: when its nodes stopped
    running (an autodown: the agent's time), where its billed uptime ends (default: now).
    """
    stop_keepers(record.name)  # its SSH connection keepers go first, with their connections
    try:
        engine = engine_for(record.spec.offer.cloud, config=config, state=db)
    except StackError as err:
        if record.handle is None and not _may_hold_resources(record, config):
            emit(f"nothing was ever made for it ({err.message}): forgetting the record")
            forget(db, record.name, "cluster.destroyed", reason)
            return None
        if not purge:
            raise
        return _purge(db, record, err, reason=reason, emit=emit)
    # An apply killed inside `up` left no handle: a node-less one still lets the engine
    # remove what it made (local directories, reserved hosts, a half-made Pulumi stack).
    handle = record.handle or ClusterHandle(
        name=record.name,
        engine=engine.name,
        infra=record.spec.offer.infra,
        offer=record.spec.offer,
        nodes=[],
    )
    if record.status is not ClusterStatus.INIT:
        # Not UP while it is torn down: a `down` killed half-way leaves a cluster that
        # `status` shows as INIT and that a second `down` (or an apply) finishes.
        _recorded(db, record, {"status": ClusterStatus.INIT}, "cluster.tearing_down", reason)
    try:
        engine.destroy(handle, emit)
    except SkyformError as err:
        if purge:
            return _purge(db, record, err, reason=reason, emit=emit)
        if isinstance(err, StackError) and err.nothing_made:
            # Refused before it touched anything (a teammate's wrong passphrase): the
            # cluster is as it was, and so is its record.
            _recorded(db, record, {}, "cluster.teardown_refused", f"nothing torn down: {err}")
        raise
    forget(db, record.name, "cluster.destroyed", reason, ended_at=ended_at)
    from skyform.storage.cleanup import delete_ephemeral

    delete_ephemeral(db, config, record.name, emit)
    return None


def _purge(
    db: StateDB, record: ClusterRecord, err: SkyformError, *, reason: str, emit: Emit
) -> str:
    left = f"could not tear it down ({err.message}); {left_behind(record)}"
    emit(left)
    forget(db, record.name, "cluster.purged", f"{reason}: {left}")
    return left


def forget(
    db: StateDB, name: str, kind: str, message: str, *, ended_at: float | None = None
) -> None:
    """Drop the cluster from state: hosts released, usage closed (at `ended_at`, default
    now), record gone, an event."""
    db.release_nodes(name)
    db.close_usage(name, ended_at=ended_at)
    db.delete_cluster(name)
    _event(db, kind, name, message)


def _may_hold_resources(record: ClusterRecord, config: Config) -> bool:
    if is_on_prem(record.spec.offer.cloud):
        return True  # their engines always load: never here
    from skyform.stacks.pulumi.backend import stack_holds_resources  # reads files; no SDK

    return stack_holds_resources(record.name, config) is not False


def left_behind(record: ClusterRecord) -> str:
    """What a purged cluster may still have out there, and where to look."""
    handle, offer = record.handle, record.spec.offer
    nodes = handle.nodes if handle else []
    if offer.cloud == "local":
        return "its node directories may remain under SKYFORM_HOME/local; delete them by hand"
    if offer.cloud == "ssh":
        hosts = ", ".join(f"{n.host}:{n.port}" for n in nodes) or "its reserved hosts"
        return (
            f"{hosts} may still run its jobs and keep ~/.skyform_node and ~/skyform_workdir; "
            "clean them by hand"
        )
    stack = handle.stack if handle and handle.stack else f"skyform/{record.name}"
    ids = ", ".join(n.node_id for n in nodes)
    made = f" (nodes {ids})" if ids else ""
    return (
        f"the Pulumi stack {stack} and what it made on {offer.infra}{made} may still exist "
        f"and cost money: check the {offer.cloud} console, or `pulumi destroy` the stack"
    )
