"""Jobs on an existing cluster: refresh their status, stream logs, cancel them.

Status lives in files on the nodes (no daemon); these functions read them through the exec
layer and write what they learn back into state.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from skyform.errors import JobNotFoundError, LockedError, NodeUnreachable, StateError
from skyform.exec.node_jobs import NodeJobState, setup_log_key
from skyform.exec.results import LogLine
from skyform.exec.run import ClusterSession, open_cluster
from skyform.lifecycle.cluster_job import follow_job, job_key, on_job_nodes, refresh_job
from skyform.lifecycle.interrupts import detaching
from skyform.lifecycle.settle import job_ended_at, nodes_of, nodes_on_demand, settle_unstarted
from skyform.state.db import StateDB
from skyform.state.lock import cluster_lock
from skyform.state.models import ClusterRecord, JobRecord, JobStatus

LIVE = (JobStatus.RUNNING, JobStatus.PENDING)


def _pick(db: StateDB, record: ClusterRecord, job_id: int | None) -> JobRecord:
    if job_id is None:
        job = db.latest_job(record.name)
        if job is None:
            raise JobNotFoundError(
                f"cluster {record.shown_name!r} has no jobs yet",
                f"Run one: skyform exec {record.shown_name} 'echo hi'",
            )
        return job
    job = db.get_job(record.name, job_id)
    if job is None:
        ids = ", ".join(str(j.job_id) for j in db.list_jobs(record.name)) or "none"
        raise JobNotFoundError(
            f"cluster {record.shown_name!r} has no job {job_id} (jobs: {ids})",
            f"See them with: skyform queue {record.shown_name}",
        )
    return job


def _handle(record: ClusterRecord):
    if record.handle is None:
        raise StateError(
            f"cluster {record.shown_name!r} has no nodes yet (status {record.status.value})",
            "Apply its plan again, or take it down: skyform down " + record.shown_name,
        )
    return record.handle


def _unreachable_warnings(session) -> list[str]:
    return [
        f"node {rank} did not answer: {err.message}"
        for rank, err in sorted(session.unreachable.items())
    ]


def settle_jobs(db: StateDB, record: ClusterRecord) -> None:
    """Cluster jobs a command left INIT or SETTING_UP (killed, or it lost the state store)
    are settled from the nodes (lifecycle/settle.py) — when no skyform command holds the
    cluster (one that does may still be starting them)."""
    try:
        with (
            cluster_lock(record.name, wait=0, purpose=f"skyform queue {record.name}"),
            nodes_on_demand(record.handle) as nodes,
        ):
            settle_unstarted(db, record.name, managed_job_id=None, nodes=nodes)
    except LockedError:
        pass


def refresh_jobs(db: StateDB, record: ClusterRecord) -> tuple[list[JobRecord], list[str]]:
    """Every job of the cluster, unfinished ones refreshed from the nodes that answer."""
    settle_jobs(db, record)
    jobs = db.list_jobs(record.name)
    if not any(j.status in LIVE for j in jobs) or record.handle is None:
        return jobs, []
    with open_cluster(record.handle, require_all=False) as session:
        jobs = [refresh_job(db, session, j) for j in jobs]
        return jobs, _unreachable_warnings(session)


def refresh_queues(
    db: StateDB, names: list[str]
) -> tuple[list[tuple[str, list[JobRecord]]], list[str]]:
    """`queue [CLUSTER...]`: each named cluster's jobs, or every cluster's when none is named
    (as `sky queue` does). Warnings name the cluster a node of which did not answer."""
    records = [db.require_cluster(n) for n in dict.fromkeys(names)] or db.list_clusters()
    queues, warnings = [], []
    for record in records:
        jobs, notes = refresh_jobs(db, record)
        queues.append((record.shown_name, jobs))
        warnings += [f"{record.shown_name}: {note}" if len(records) > 1 else note for note in notes]
    return queues, warnings


def current_job(db: StateDB, record: ClusterRecord, job_id: int | None) -> JobRecord:
    """The job (default: the latest) with its status read from the nodes if it is live."""
    job = _pick(db, record, job_id)
    if job.status not in LIVE or record.handle is None:
        return job
    with open_cluster(record.handle, require_all=False) as session:
        return refresh_job(db, session, job)


@dataclass(frozen=True)
class LogsResult:
    job: JobRecord
    warnings: list[str]
    notes: list[str] = field(default_factory=list)  # about which job and what it has


def never_ran_note(
    job: JobRecord, cluster: str, *, latest_that_ran: JobRecord | None = None
) -> str:
    """`cluster`: the job's cluster as the user knows it (ClusterRecord.shown_name)."""
    why = f"{job.status.value}" + (f": {job.reason}" if job.reason else "")
    note = f"job {job.job_id} on {cluster} never ran ({why})"
    if latest_that_ran is not None:
        note += (
            f"; the latest job that ran is {latest_that_ran.job_id}: "
            f"skyform logs {cluster} {latest_that_ran.job_id}"
        )
    return note


def stream_logs(
    db: StateDB,
    record: ClusterRecord,
    job_id: int | None,
    *,
    follow: bool,
    node: int | None,
    on_log: Callable[[LogLine], None],
    tail: int | None = None,
) -> LogsResult:
    """The job's setup output (when it ran one), then its run output; with `follow`, until
    it ends. A job that never ran says so in a note instead of printing nothing. `tail`:
    only the last `tail` lines of each node's run output (and no setup output) to begin with.
    """
    settle_jobs(db, record)
    job = _pick(db, record, job_id)
    handle = _handle(record)
    if node is not None and not 0 <= node < len(handle.nodes):
        raise StateError(
            f"cluster {record.shown_name!r} has nodes 0..{len(handle.nodes) - 1}, not {node}"
        )
    if node is not None and job.num_nodes is not None and node >= job.num_nodes:
        raise StateError(
            f"job {job.job_id} of cluster {record.shown_name!r} runs on nodes "
            f"0..{job.num_nodes - 1} only, not on node {node}",
            f"Drop --node, or pass one of 0..{job.num_nodes - 1}.",
        )
    with open_cluster(handle, require_all=False) as opened, detaching(job):
        session = on_job_nodes(opened, job)
        if job.setup_key is not None and (tail is None or job.never_ran):
            live = follow and job.status is JobStatus.SETTING_UP
            _print_setup(session, job, node=node, follow=live, on_log=on_log)
            if live:
                job = _past_setup(db, record, job)
        if job.never_ran:
            ran = [j for j in db.list_jobs(record.name) if not j.never_ran]
            latest = ran[-1] if job_id is None and ran else None
            note = never_ran_note(job, record.shown_name, latest_that_ran=latest)
            return LogsResult(job, _unreachable_warnings(session), [note])
        if follow and job.status in LIVE:  # follow to the end, as apply does
            final = follow_job(db, session, job, on_log=on_log, node=node, tail=tail)
            return LogsResult(final, _unreachable_warnings(session))
        try:
            for line in session.logs(job_key(job), rank=node, follow=False, tail=tail):
                on_log(line)
        except NodeUnreachable:
            pass  # reported below with every node that did not answer
        return LogsResult(refresh_job(db, session, job), _unreachable_warnings(session))


def _print_setup(
    session: ClusterSession,
    job: JobRecord,
    *,
    node: int | None,
    follow: bool,
    on_log: Callable[[LogLine], None],
) -> None:
    """The setup output this job saw: its own copy once setup ended (the setup's own log
    may belong to a later run of it by then), else the setup's log."""
    assert job.setup_key is not None
    key = job.setup_key
    if not follow:
        copy = setup_log_key(job_key(job))
        kept = session.status(copy).nodes.values()
        if any(n.state is not NodeJobState.MISSING for n in kept):
            key = copy
    try:
        for line in session.logs(key, rank=node, follow=follow, setup=True):
            on_log(line)
    except NodeUnreachable:
        pass  # reported with every node that did not answer


def _past_setup(db: StateDB, record: ClusterRecord, job: JobRecord) -> JobRecord:
    """After following a setup: the job as its apply records it next (submitted, or ended);
    an apply that died meanwhile leaves it to settle_jobs."""
    deadline = time.monotonic() + 30
    while job.status is JobStatus.SETTING_UP and time.monotonic() < deadline:
        time.sleep(0.2)
        settle_jobs(db, record)
        job = db.get_job(job.cluster, job.job_id) or job
    return job


def cancel_jobs(db: StateDB, record: ClusterRecord, job_ids: list[int] | None) -> list[JobRecord]:
    """Cancel the given jobs (or every unfinished one); returns them as recorded after."""
    targets = (
        [_pick(db, record, i) for i in job_ids]
        if job_ids is not None
        else [j for j in db.list_jobs(record.name) if not j.status.is_terminal]
    )
    if not targets:
        return []
    done = []
    with (
        cluster_lock(record.name, purpose=f"skyform cancel {record.name}"),
        open_cluster(_handle(record)) as session,
    ):
        settled = {
            j.job_id: j
            for j in settle_unstarted(db, record.name, managed_job_id=None, nodes=nodes_of(session))
        }
        for job in (settled.get(t.job_id, t) for t in targets):
            if job.status.is_terminal:
                done.append(job)
                continue
            state = on_job_nodes(session, job).cancel(job_key(job))
            codes = dict(state.exit_codes)
            status = state.status if state.status.is_terminal else JobStatus.CANCELLED
            updated = job.model_copy(
                update={
                    "status": status,
                    "exit_codes": codes,
                    "ended_at": job_ended_at(job, state),
                }
            )
            db.put_job(updated)
            db.add_event(
                "job.cancelled",
                f"job {job.job_id} cancelled",
                cluster=record.name,
                job_id=job.job_id,
            )
            done.append(updated)
    return done


# --- the verbs: each opens the state, does its work, closes it -----------------------------


def queue_of(
    names: list[str], *, skip_finished: bool = False
) -> tuple[list[tuple[str, list[JobRecord]]], list[str]]:
    """`skyform queue [CLUSTER...]`: every named (default: every) cluster's jobs, refreshed;
    `skip_finished`: only those that have not ended (`sky queue -s`)."""
    from skyform.state.db import open_state

    with open_state() as db:
        queues, warnings = refresh_queues(db, names)
    if skip_finished:
        queues = [(c, [j for j in jobs if not j.status.is_terminal]) for c, jobs in queues]
    return queues, warnings


def job_status(cluster: str, job_id: int | None) -> JobRecord:
    """`skyform logs --status`: the job (default: the latest) as the nodes say it is now."""
    from skyform.state.db import open_state

    with open_state() as db:
        return current_job(db, db.require_cluster(cluster), job_id)


def logs_of(
    cluster: str,
    job_id: int | None,
    *,
    follow: bool,
    node: int | None,
    on_log: Callable[[LogLine], None],
    tail: int | None = None,
) -> LogsResult:
    """`skyform logs`: stream a job's setup and run output to `on_log`."""
    from skyform.state.db import open_state

    with open_state() as db:
        record = db.require_cluster(cluster)
        return stream_logs(db, record, job_id, follow=follow, node=node, on_log=on_log, tail=tail)


def cancel_on(cluster: str, job_ids: list[int] | None) -> list[JobRecord]:
    """`skyform cancel`: the named jobs (None: every unfinished one), cancelled on the nodes."""
    from skyform.state.db import open_state

    with open_state() as db:
        return cancel_jobs(db, db.require_cluster(cluster), job_ids)
