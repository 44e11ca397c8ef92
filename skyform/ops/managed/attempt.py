"""One attempt at running a task of a managed job: provision from the current plan revision,
submit (or adopt the job a killed controller had already submitted), notice a cluster taken
away behind the job's back.

The controller composes these; every step writes state first, so a controller restarted
after `kill -9` finds where its predecessor was and does not run anything twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from skyform.config import Config
from skyform.errors import LockedError, PlanError, StalePlanError
from skyform.exec import grouphosts
from skyform.exec.node_jobs import NodeJobState
from skyform.exec.run import ClusterSession, open_cluster
from skyform.lifecycle import clusters
from skyform.lifecycle.cluster_job import job_key
from skyform.lifecycle.driven import Driver, bring_up, driving, start_detached
from skyform.lifecycle.freshness import revision_stale_reasons
from skyform.ops.managed import jobdir
from skyform.ops.managed.sealed import revision_plan
from skyform.plan.model import JobSpec, Plan, TaskPlacement
from skyform.recovery.detect import Outcome
from skyform.state.db import StateDB
from skyform.state.managed import ManagedJobRecord, ManagedTask
from skyform.state.models import ClusterRecord, ClusterStatus, JobRecord, JobStatus
from skyform.state.revisions import Revision, Revisions, job_owner

Log = Callable[[str], None]


def acting_for(job_id: int) -> str:
    """What a managed job's controller records its cluster changes as made by."""
    return f"managed job {job_id}"


def _placing_revision(
    db: StateDB, record: ManagedJobRecord, task: ManagedTask
) -> tuple[Revision, Plan, TaskPlacement]:
    revisions = Revisions(db).list(job_owner(record.id))
    for rev in reversed(revisions):
        plan, _ = revision_plan(db, rev)
        placement = plan.placement_for(task.cluster)
        if placement is not None:
            return rev, plan, placement
    raise PlanError(f"no plan revision of managed job {record.id} places {task.cluster!r}")


def latest_placement(
    db: StateDB, record: ManagedJobRecord, task: ManagedTask
) -> tuple[Plan, TaskPlacement]:
    """The newest plan revision that places this task's cluster."""
    _, plan, placement = _placing_revision(db, record, task)
    return plan, placement


def fresh_revision(db: StateDB, record: ManagedJobRecord, task: ManagedTask) -> Plan:
    """The newest revision placing the task, refused (StalePlanError) when its cluster was
    changed after it was made by anyone but this job (lifecycle/freshness.py's rule)."""
    rev, plan, _ = _placing_revision(db, record, task)
    reasons = revision_stale_reasons(plan, [task.cluster], db=db, acting_for=acting_for(record.id))
    if reasons:
        raise StalePlanError(
            f"plan revision {rev.revision} of managed job {record.id} is stale: "
            + "; ".join(reasons),
            "The controller plans a new revision against the state as it is now.",
        )
    return plan


def driver(record: ManagedJobRecord) -> Driver:
    """The managed job's controller, as its clusters' launches are recorded."""
    data = {"managed_job_id": record.id}
    return Driver(acting_for(record.id), "managed", data, managed_job_id=record.id)


def provision(
    db: StateDB, config: Config, record: ManagedJobRecord, task: ManagedTask, log: Log
) -> ClusterRecord:
    """A usable cluster for the task: the existing one, or a new one from a fresh plan."""
    plan = fresh_revision(db, record, task)
    change = plan.change_for(task.cluster)
    spec = change.after if change is not None and change.after is not None else None
    if spec is None:
        raise PlanError(f"plan revision has no cluster spec for {task.cluster!r}")
    with driving(db, task.cluster, acting_for(record.id)):
        current = db.get_cluster(task.cluster)
        if (
            current is not None
            and current.handle is not None
            and current.status in (ClusterStatus.INIT, ClusterStatus.UP)
        ):
            return current
        keep = None
        if current is not None and clusters.can_salvage(current, spec):
            log(f"keeping the surviving nodes of {task.cluster}; replacing the lost ones")
            keep = clusters.salvage(db, current, emit=log)
        elif current is not None:
            log(f"tearing down {task.cluster} ({current.status.value}) before relaunching")
            clusters.destroy(db, config, current, reason="replaced by the managed job", emit=log)
        log(
            f"provisioning {task.cluster} on {spec.offer.infra} ({spec.num_nodes}x "
            f"{spec.offer.instance_type}{', spot' if spec.offer.spot else ''})"
        )
        why = "launch" if task.recovery_count == 0 else f"recovery {task.recovery_count}"
        return bring_up(
            db,
            config,
            spec,
            driver(record),
            current=None,
            reason=why,
            source=record.task_file,
            plan_digest=None,
            log=log,
            keep=keep,
        )


def adoptable_job(
    db: StateDB, session: ClusterSession, record: ManagedJobRecord, task: ManagedTask
) -> JobRecord | None:
    """The cluster job a previous controller submitted for this attempt, if the nodes have
    it (running or finished): resuming it must not start the work again."""
    jobs = [
        j
        for j in db.list_jobs(task.cluster)
        if j.managed_job_id == record.id and j.recovery_count == task.recovery_count
    ]
    if not jobs:
        return None
    job = jobs[-1]
    if job.status is JobStatus.RUNNING or job.status.is_terminal:
        return job
    state = session.status(job_key(job))
    if any(n.state is not NodeJobState.MISSING for n in state.nodes.values()):
        adopted = job.model_copy(update={"status": JobStatus.RUNNING})
        db.put_job(adopted)
        return adopted
    return None


def submit(
    db: StateDB,
    record: ManagedJobRecord,
    task: ManagedTask,
    cluster: ClusterRecord,
    placement: TaskPlacement,
    secrets: dict[str, str],
    log: Log,
) -> tuple[ClusterSession, JobRecord]:
    """Adopt the job already on the nodes, or sync/set up/submit a new one."""
    assert cluster.handle is not None
    session = open_cluster(
        cluster.handle,
        on_event=lambda stage, rank, msg: log(f"{task.cluster} node {rank}: {stage}: {msg}"),
    )
    try:
        with driving(db, task.cluster, acting_for(record.id)):
            job = adoptable_job(db, session, record, task)
            if job is not None:
                status = job.status.value
                log(f"adopting job {job.job_id} already on {task.cluster} (status {status})")
                return session, job
            session, run = start_detached(
                db,
                cluster,
                with_group_env(db, record, task, placement),
                driver(record),
                task_dir=jobdir.paths_start(record),
                secrets=secrets,
                log=log,
                task_id=f"skyform-managed-{record.id}-{task.index}",
                recovery_count=task.recovery_count,
                session=session,
            )
    except BaseException:
        session.close()
        raise
    log(f"submitted job {run.job.job_id} on {task.cluster} (recovery {task.recovery_count})")
    return session, run.job


def with_group_env(
    db: StateDB, record: ManagedJobRecord, task: ManagedTask, placement: TaskPlacement
) -> JobSpec:
    """A job group's task sees the group's name as SkyPilot sets it (SKYPILOT_JOBGROUP_NAME,
    and SKYFORM_JOBGROUP_NAME); like the other system values, a task cannot override it. Its
    setup and run first read the node's name-resolution settings (exec/grouphosts.py)."""
    plan, _ = latest_placement(db, record, task)
    if plan.task.execution != "parallel" or not plan.task.name:
        return placement.job
    job = placement.job
    group = {p + "JOBGROUP_NAME": plan.task.name for p in ("SKYPILOT_", "SKYFORM_")}
    names = grouphosts.source_line(grouphosts.group_key(record.id, plan.task.name))
    scripts = {k: names + v for k, v in (("setup", job.setup), ("run", job.run)) if v}
    return job.model_copy(update={"envs": {**job.envs, **group}, **scripts})


def close_cluster_job(
    db: StateDB, task: ManagedTask, outcome: Outcome, detail: str, codes: dict[int, int | None]
) -> None:
    """The lower level: the cluster job ends (a preemption fails it; the upper level only
    goes RECOVERING)."""
    if task.cluster_job_id is None:
        return
    job = db.get_job(task.cluster, task.cluster_job_id)
    if job is None or job.status.is_terminal:
        return
    status = {
        Outcome.SUCCEEDED: JobStatus.SUCCEEDED,
        Outcome.CANCELLED: JobStatus.CANCELLED,
        Outcome.FAILED_SETUP: JobStatus.FAILED_SETUP,
    }.get(outcome, JobStatus.FAILED)
    db.put_job(
        job.model_copy(update={"status": status, "exit_codes": codes, "ended_at": time.time()})
    )
    db.add_event("job." + status.value.lower(), detail, cluster=task.cluster, job_id=job.job_id)


def taken_away(db: StateDB, cluster: ClusterRecord, *, by: str, wait: bool = True) -> str | None:
    """Why `cluster` is no longer the one this attempt launched (torn down or replaced
    outside the managed job), or None. With `wait`, a teardown in progress (it holds the
    cluster's lock) is waited for first, so a job killed by it is not taken for a failure."""
    current = db.get_cluster(cluster.name)
    if wait and current is not None:
        try:
            with driving(db, cluster.name, by):
                current = db.get_cluster(cluster.name)
        except LockedError:
            pass
    if current is None:
        return f"cluster {cluster.name} was torn down outside the managed job"
    nodes = [n.node_id for n in current.handle.nodes] if current.handle else []
    if cluster.handle is not None and nodes != [n.node_id for n in cluster.handle.nodes]:
        return f"cluster {cluster.name} was replaced outside the managed job"
    return None
