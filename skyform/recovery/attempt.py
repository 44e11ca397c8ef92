"""One attempt at running a task of a managed job: provision from the current plan revision,
submit (or adopt the job a killed controller had already submitted), save logs, tear down.

The controller composes these; every step writes state first, so a controller restarted
after `kill -9` finds where its predecessor was and does not run anything twice.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from skyform.apply import clusters
from skyform.apply.jobrun import job_key, mark_ready, start_job
from skyform.config import Config
from skyform.errors import PlanError
from skyform.exec.jobs import NodeState
from skyform.exec.run import ClusterSession, open_cluster
from skyform.plan.model import Plan, TaskPlacement
from skyform.plan.planfile import read_plan
from skyform.recovery import jobdir
from skyform.state.db import StateDB
from skyform.state.managed import ManagedJobRecord, ManagedJobs, ManagedTask, PlanRevision
from skyform.state.models import ClusterRecord, ClusterStatus, JobRecord, JobStatus

Log = Callable[[str], None]


def latest_placement(
    db: StateDB, record: ManagedJobRecord, task: ManagedTask
) -> tuple[Plan, TaskPlacement]:
    """The newest plan revision that places this task's cluster."""
    revisions: list[PlanRevision] = ManagedJobs(db).revisions(record.id)
    for rev in reversed(revisions):
        plan, _ = read_plan(Path(rev.path))
        placement = plan.placement_for(task.cluster)
        if placement is not None:
            return plan, placement
    raise PlanError(f"no plan revision of managed job {record.id} places {task.cluster!r}")


def provision(
    db: StateDB, config: Config, record: ManagedJobRecord, task: ManagedTask, log: Log
) -> ClusterRecord:
    """A usable cluster for the task: the existing one, or a new one from the plan."""
    current = db.get_cluster(task.cluster)
    if (
        current is not None
        and current.handle is not None
        and current.status in (ClusterStatus.INIT, ClusterStatus.UP)
    ):
        return current
    plan, _ = latest_placement(db, record, task)
    change = plan.change_for(task.cluster)
    spec = change.after if change is not None and change.after is not None else None
    if spec is None:
        raise PlanError(f"plan revision has no cluster spec for {task.cluster!r}")
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
    new = clusters.provision(
        db,
        config,
        spec,
        source=record.task_file,
        plan_digest=None,
        emit=log,
        managed_job_id=record.id,
        reason=why,
        keep=keep,
    )
    db.add_event(
        "managed.provisioned",
        f"{task.cluster} on {spec.offer.infra}",
        cluster=task.cluster,
        data={"managed_job_id": record.id},
    )
    return new


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
    if any(n.state is not NodeState.MISSING for n in state.nodes.values()):
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
        job = adoptable_job(db, session, record, task)
        if job is not None:
            log(f"adopting job {job.job_id} already on {task.cluster} (status {job.status.value})")
            return session, job
        session, run = start_job(
            db,
            cluster,
            placement.job,
            task_dir=Path(record.task_file).parent,
            secrets=secrets,
            task_id=f"skyform-managed-{record.id}-{task.index}",
            recovery_count=task.recovery_count,
            managed_job_id=record.id,
            session=session,
        )
    except BaseException:
        session.close()
        raise
    mark_ready(db, cluster, placement.job, run.job)
    log(f"submitted job {run.job.job_id} on {task.cluster} (recovery {task.recovery_count})")
    return session, run.job


def save_logs(
    session: ClusterSession, job: JobRecord, task: ManagedTask, record_id: int, log: Log
) -> None:
    """Keep the job's output before its cluster goes away (nodes that answer only)."""
    out = jobdir.logs_dir(record_id)
    lines: dict[int, list[str]] = {}
    try:
        for line in session.logs(job_key(job), follow=False):
            lines.setdefault(line.rank, []).append(line.text)
    except Exception as err:  # a lost node's log is lost with it
        log(f"could not read every node's log: {err}")
    for rank, text in lines.items():
        name = f"task{task.index}-rec{task.recovery_count}-job{job.job_id}-node{rank}.log"
        (out / name).write_text("\n".join(text) + "\n")
