"""A job's record follows its result on the nodes.

A command records a job's submission only after the nodes started it. When it could not
write that (killed with `kill -9`, or the state database away for longer than its retry
window), the record still says INIT or SETTING_UP while the job may well have run. The next
command that owns the cluster settles such a job from its nodes:

- the nodes have its run: it is recorded as they report it (RUNNING, or ended with its exit
  codes) — and its cluster as the start would have recorded it (UP, setup done, the job's
  text and workdir files), so the next plan does not run it again;
- the nodes report its setup FAILED: FAILED_SETUP, as its apply would have recorded it;
- otherwise it never ran: CANCELLED, with the reason (as a killed command's job always was).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from skyform.errors import ExecError, SkyformError
from skyform.exec.node_jobs import NodeJobState, run_key
from skyform.exec.results import JobState
from skyform.exec.run import ClusterSession, open_cluster
from skyform.lifecycle import clusters
from skyform.state.db import StateDB
from skyform.state.models import ClusterHandle, ClusterStatus, JobRecord, JobStatus

UNSTARTED = (JobStatus.INIT, JobStatus.SETTING_UP)
NEVER_RAN = "interrupted: the skyform command that started it stopped before the job ran (killed?)"

# The nodes to ask, opened only when a job needs settling (None: they cannot be reached)
Nodes = Callable[[], "ClusterSession | None"]


def job_ended_at(job: JobRecord, state: JobState) -> float:
    """The nodes' end, never before the recorded start (clocks of client and nodes differ)."""
    return max(state.ended_at(time.time()), job.started_at or 0.0)


def record_final(db: StateDB, job: JobRecord, state: JobState, reason: str = "") -> JobRecord:
    """Record the job as the nodes' `state` says it ended (a node that did not answer fails
    a job that had not ended)."""
    codes = dict(state.exit_codes)
    for rank in state.unreachable:
        codes.setdefault(rank, None)
    status = state.status
    if state.unreachable and not status.is_terminal:
        status = JobStatus.FAILED_SETUP if state.setup else JobStatus.FAILED
    updated = job.model_copy(
        update={
            "status": status,
            "exit_codes": codes,
            "ended_at": job_ended_at(job, state) if status.is_terminal else None,
            "cluster_update": None,
        }
    )
    db.put_job(updated)
    db.add_event(
        "job." + status.value.lower(),
        reason or f"job {job.job_id} {state.summary()}",
        cluster=job.cluster,
        job_id=job.job_id,
    )
    return updated


def settle_unstarted(
    db: StateDB,
    cluster: str,
    *,
    managed_job_id: int | None,
    nodes: Nodes,
    skip: int | None = None,
) -> list[JobRecord]:
    """Jobs (of this managed job, or cluster jobs when None; not job `skip`, the caller's
    own) that a command left before their submission was recorded, settled from the nodes.
    Call only as their owner — holding the cluster's lock, or as the managed job's one
    controller."""
    jobs = db.list_jobs(cluster)
    pending = [
        j
        for j in jobs
        if j.status in UNSTARTED and j.managed_job_id == managed_job_id and j.job_id != skip
    ]
    if not pending:
        return []
    session = nodes()
    settled = []
    for job in pending:
        run, setup = _on_nodes(session, job)
        if run is not None:
            later = [j for j in jobs if j.job_id > job.job_id and not j.never_ran]
            settled.append(_started(db, job, run, update_cluster=not later))
        elif setup is not None and setup.status is JobStatus.FAILED_SETUP:
            why = f"setup {setup.summary()}"
            settled.append(record_final(db, job.model_copy(update={"reason": why}), setup, why))
        else:
            settled.append(_never_ran(db, job))
    return settled


def _on_nodes(
    session: ClusterSession | None, job: JobRecord
) -> tuple[JobState | None, JobState | None]:
    """(its run, its setup) as the nodes hold them; the run is None when no node has it."""
    if session is None:
        return None, None
    try:
        run = session.narrowed(job.num_nodes).status(
            run_key(job.cluster, job.job_id, job.recovery_count)
        )
        if any(n.state is not NodeJobState.MISSING for n in run.nodes.values()):
            return run, None
        if job.setup_key is None:
            return None, None
        return None, session.status(job.setup_key, setup=True)
    except ExecError:  # a node without skyform's runner, or one that answers nonsense
        return None, None


def _started(db: StateDB, job: JobRecord, run: JobState, *, update_cluster: bool) -> JobRecord:
    """The job ran: its cluster as its start records it, then the job as the nodes say."""
    if update_cluster and job.cluster_update is not None:
        ready = job.cluster_update
        record = db.get_cluster(job.cluster)
        if record is not None and record.status in (ClusterStatus.INIT, ClusterStatus.UP):
            update = {"job": ready.job, "workdir_files": ready.workdir_files}
            clusters.mark_up(db, record.model_copy(update=update), setup_done=ready.setup_done)
    starts = [n.started_at for n in run.nodes.values() if n.started_at is not None]
    job = job.model_copy(
        update={
            "status": JobStatus.RUNNING,
            "started_at": min(starts) if starts else time.time(),
            "cluster_update": None,
        }
    )
    db.add_event(
        "job.settled",
        f"job {job.job_id}: its start was not recorded; its nodes have it ({run.summary()})",
        cluster=job.cluster,
        job_id=job.job_id,
    )
    if run.is_terminal:
        return record_final(db, job, run)
    db.put_job(job)
    return job


def _never_ran(db: StateDB, job: JobRecord) -> JobRecord:
    job = job.model_copy(
        update={
            "status": JobStatus.CANCELLED,
            "ended_at": time.time(),
            "reason": NEVER_RAN,
            "cluster_update": None,
        }
    )
    db.put_job(job)
    db.add_event("job.cancelled", NEVER_RAN, cluster=job.cluster, job_id=job.job_id)
    return job


def nodes_of(session: ClusterSession) -> Nodes:
    """`nodes` for a caller that has the cluster's session open already."""
    return lambda: session


@contextlib.contextmanager
def nodes_on_demand(handle: ClusterHandle | None) -> Iterator[Nodes]:
    """`nodes` that connects to the cluster the first time it is asked (and disconnects at
    the block's end); a cluster whose nodes cannot be reached gives None."""
    opened: list[ClusterSession] = []

    def nodes() -> ClusterSession | None:
        if handle is None:
            return None
        if not opened:
            try:
                opened.append(open_cluster(handle, require_all=False, prepare=False))
            except SkyformError:
                return None
        return opened[0]

    try:
        yield nodes
    finally:
        for session in opened:
            session.close()
