"""Jobs on an existing cluster: refresh their status, stream logs, cancel them.

Status lives in files on the nodes (no daemon); these functions read them through the exec
layer and write what they learn back into state.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from skyform.apply.jobrun import follow_job, job_key, refresh_job
from skyform.errors import JobNotFoundError, NodeUnreachable, StateError
from skyform.exec.results import LogLine
from skyform.exec.run import open_cluster
from skyform.state.db import StateDB
from skyform.state.lock import cluster_lock
from skyform.state.models import ClusterRecord, JobRecord, JobStatus

LIVE = (JobStatus.RUNNING, JobStatus.PENDING)


def _pick(db: StateDB, record: ClusterRecord, job_id: int | None) -> JobRecord:
    if job_id is None:
        job = db.latest_job(record.name)
        if job is None:
            raise JobNotFoundError(
                f"cluster {record.name!r} has no jobs yet",
                f"Run one: skyform exec {record.name} 'echo hi'",
            )
        return job
    job = db.get_job(record.name, job_id)
    if job is None:
        ids = ", ".join(str(j.job_id) for j in db.list_jobs(record.name)) or "none"
        raise JobNotFoundError(
            f"cluster {record.name!r} has no job {job_id} (jobs: {ids})",
            f"See them with: skyform queue {record.name}",
        )
    return job


def _handle(record: ClusterRecord):
    if record.handle is None:
        raise StateError(
            f"cluster {record.name!r} has no nodes yet (status {record.status.value})",
            "Apply its plan again, or take it down: skyform down " + record.name,
        )
    return record.handle


def _unreachable_warnings(session) -> list[str]:
    return [
        f"node {rank} did not answer: {err.message}"
        for rank, err in sorted(session.unreachable.items())
    ]


def refresh_jobs(db: StateDB, record: ClusterRecord) -> tuple[list[JobRecord], list[str]]:
    """Every job of the cluster, unfinished ones refreshed from the nodes that answer."""
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
        queues.append((record.name, jobs))
        warnings += [f"{record.name}: {note}" if len(records) > 1 else note for note in notes]
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


def stream_logs(
    db: StateDB,
    record: ClusterRecord,
    job_id: int | None,
    *,
    follow: bool,
    node: int | None,
    on_log: Callable[[LogLine], None],
) -> LogsResult:
    job = _pick(db, record, job_id)
    handle = _handle(record)
    if node is not None and not 0 <= node < len(handle.nodes):
        raise StateError(
            f"cluster {record.name!r} has nodes 0..{len(handle.nodes) - 1}, not {node}"
        )
    with open_cluster(handle, require_all=False) as session:
        if follow and job.status in LIVE:  # follow to the end, as apply does
            final = follow_job(db, session, job, on_log=on_log, node=node)
            return LogsResult(final, _unreachable_warnings(session))
        try:
            for line in session.logs(job_key(job), rank=node, follow=False):
                on_log(line)
        except NodeUnreachable:
            pass  # reported below with every node that did not answer
        return LogsResult(refresh_job(db, session, job), _unreachable_warnings(session))


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
        for job in targets:
            if job.status.is_terminal:
                done.append(job)
                continue
            state = session.cancel(job_key(job))
            codes = dict(state.exit_codes)
            status = state.status if state.status.is_terminal else JobStatus.CANCELLED
            updated = job.model_copy(
                update={"status": status, "exit_codes": codes, "ended_at": time.time()}
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
