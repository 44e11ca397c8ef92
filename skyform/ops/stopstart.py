"""`skyform stop` / `skyform start`, per engine, and recording a cluster STOPPED.

Each engine does its part (`StackEngine.stop` / `start`); what a stop means per infra is the
infra table's `stop` column (skyform/infra.py):
- ssh pools: stop ends the cluster's processes (its jobs and the autostop agent) on every
  node and keeps the reservation, the workdir and the setup marker; start resumes on the
  same hosts (nothing to provision, setup is not repeated) and gives the head node its
  autostop setting again.
- aws / gcp: through the cluster's Pulumi stack, so the stack state stays true: the
  instances are stopped (AWS `aws_ec2_instance_state`, GCP `desired_status: TERMINATED`),
  their disks kept; start runs them again in the same zone and reads their new addresses.
  AWS cannot stop spot instances: refused, offering autodown.
- local and kubernetes: only `down` exists (refused with a clear error).
A stopped cluster's usage interval is closed (no compute is billed while it is stopped) and
a new one opens when it starts. Its bucket mounts are parked when it stops (MOUNT_CACHED
uploads flushed, every mount unmounted and its rclone ended: on a cloud before the machines
stop, on an ssh pool once the jobs have ended) and mounted again when it starts, before
anything runs (lifecycle/bucketmounts.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

from skyform.config import Config
from skyform.errors import SkyformError
from skyform.plan.autostop import why_not_stoppable
from skyform.state.db import StateDB
from skyform.state.models import ClusterRecord, ClusterStatus

Emit = Callable[[str], None]


def refuse_unstoppable(record: ClusterRecord) -> None:
    why = why_not_stoppable(record.spec.offer)
    if why is None:
        return
    raise SkyformError(
        f"cluster {record.shown_name!r} cannot be stopped: {why}",
        f"Tear it down instead (skyform down {record.shown_name}), or let it go when idle: "
        f"skyform autostop {record.shown_name} -i 10 --down",
    )


def stop_cluster(db: StateDB, config: Config, name: str, *, emit: Emit) -> ClusterRecord:
    from skyform.ops.managed.cancel import refuse_managed_clusters
    from skyform.state.lock import cluster_lock

    with cluster_lock(name, purpose=f"skyform stop {name}"):
        refuse_managed_clusters(db, [name])
        record = db.require_cluster(name)
        refuse_unstoppable(record)
        if record.status is ClusterStatus.STOPPED:
            emit("already stopped")
            return record
        if record.handle is None or record.status is not ClusterStatus.UP:
            raise SkyformError(
                f"cluster {name!r} is {record.status.value}: only an UP cluster can be stopped",
                f"Apply its plan again, or take it down: skyform down {name}",
            )
        from skyform.lifecycle.clusters import record_stopped

        return record_stopped(db, config, record, emit=emit, reason="skyform stop")


def start_cluster(db: StateDB, config: Config, name: str, *, emit: Emit) -> ClusterRecord:
    """Resume a STOPPED cluster where it was, with its autostop setting restored. One its
    node agent stopped that state still records UP (no `status --refresh` since) is taken
    as stopped first, so it is resumed (and its bucket mounts attached) all the same."""
    from skyform.lifecycle.autostop import push_setting
    from skyform.ops.autostop import converge
    from skyform.state.lock import cluster_lock

    record = db.require_cluster(name)
    if record.status is ClusterStatus.UP and record.spec.autostop is not None:
        converge(db, config, record, emit=emit)
    with cluster_lock(name, purpose=f"skyform start {name}"):
        record = db.require_cluster(name)
        if record.status is ClusterStatus.UP:
            emit("already up")
            return record
        if record.status is not ClusterStatus.STOPPED or record.handle is None:
            raise SkyformError(
                f"cluster {name!r} is {record.status.value}, not STOPPED: nothing to start",
                f"Apply its plan again, or take it down: skyform down {name}",
            )
        return resume_stopped(db, config, record, emit=emit, push=push_setting)


def resume_stopped(db: StateDB, config: Config, record: ClusterRecord, *, emit: Emit, push):
    """The part of `start` that `apply` shares (a plan applied on a stopped cluster)."""
    from skyform.stacks.registry import engine_for

    assert record.handle is not None
    engine = engine_for(
        record.spec.offer.cloud, config=config, state=db, plan_digest=record.plan_digest
    )
    handle = engine.start(record.spec, record.handle, emit)
    record = record.model_copy(
        update={
            "status": ClusterStatus.UP,
            "stopped_at": None,
            "last_active_at": None,
            "handle": handle,
        }
    )
    db.put_cluster(record)
    db.open_usage(record, reason="start")
    db.add_event("cluster.started", "started again", cluster=record.name)
    if record.spec.autostop is not None:
        record = push(db, config, record, record.spec.autostop)
        emit(f"autostop {record.spec.autostop.short} restored")  # type: ignore[union-attr]
    from skyform.lifecycle.bucketmounts import attach_after_start

    attach_after_start(config, record, emit=emit)
    return record


# --- the verbs ------------------------------------------------------------------------------

ClusterEmit = Callable[[str, str], None]  # (cluster, what happens)


def stop_clusters(names: list[str], *, emit: ClusterEmit) -> Iterator[tuple[str, bool]]:
    """`skyform stop NAMES`: each cluster in turn; yields it and whether it changed (one
    already stopped was said so through `emit`)."""
    return _each(names, stop_cluster, emit)


def start_clusters(names: list[str], *, emit: ClusterEmit) -> Iterator[tuple[str, bool]]:
    """`skyform start NAMES`: each stopped cluster in turn, as stop_clusters."""
    return _each(names, start_cluster, emit)


def _each(names: list[str], act, emit: ClusterEmit) -> Iterator[tuple[str, bool]]:
    from skyform.config import load_config
    from skyform.state.db import open_state

    config = load_config()
    with open_state() as db:
        for name in names:
            before = db.require_cluster(name).status
            after = act(db, config, name, emit=functools.partial(emit, name))
            yield name, after.status != before
