"""Converge a cluster and its job on a planned change: the steps `apply`/`launch` and the
managed-job controller share, so a cluster is brought up and a job started the same way
whoever asks.

- `converge_cluster`: no cluster yet → provision it from the spec (with the nodes a recovery
  salvaged, if any); an INIT cluster (a killed apply's) → resume it, keeping what exists.
- `run_job`: sync, set up and submit the job (lifecycle/jobrun.py), then record the cluster UP
  with its setup marker — unless setup just failed, which keeps the old marker.
Deciding *whether* to converge (plan actions, recovery policy, ownership) stays with callers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skyform.config import Config
from skyform.errors import StateError
from skyform.exec.run import ClusterSession
from skyform.lifecycle import clusters
from skyform.lifecycle.jobrun import JobRun, LogSink, NodeEvent, mark_ready, start_job
from skyform.plan.model import ClusterSpec, JobSpec
from skyform.state.db import StateDB
from skyform.state.models import ClusterHandle, ClusterRecord, ClusterStatus


def converge_cluster(
    db: StateDB,
    config: Config,
    spec: ClusterSpec,
    current: ClusterRecord | None,
    *,
    source: str | None,
    plan_digest: str | None,
    emit: clusters.Emit,
    managed_job_id: int | None = None,
    reason: str = "apply",
    keep: ClusterHandle | None = None,
) -> ClusterRecord:
    """The cluster `spec` describes, brought up from nothing or from a half-made INIT one."""
    if current is None:
        return clusters.provision(
            db,
            config,
            spec,
            source=source,
            plan_digest=plan_digest,
            emit=emit,
            managed_job_id=managed_job_id,
            reason=reason,
            keep=keep,
        )
    if current.status is ClusterStatus.INIT:
        return clusters.resume(
            db, config, current, spec, source=source, plan_digest=plan_digest, emit=emit
        )
    raise StateError(
        f"cluster {current.name!r} is {current.status.value}: only a missing or INIT cluster "
        "is brought up"
    )


def run_job(
    db: StateDB,
    record: ClusterRecord,
    job: JobSpec,
    *,
    task_dir: Path,
    secrets: Mapping[str, str],
    task_id: str | None = None,
    recovery_count: int = 0,
    managed_job_id: int | None = None,
    on_event: NodeEvent | None = None,
    on_log: LogSink | None = None,
    session: ClusterSession | None = None,
) -> tuple[ClusterSession, JobRun]:
    """Start `job` on the cluster (see start_job) and record the cluster ready; the caller
    follows or closes the session."""
    session, run = start_job(
        db,
        record,
        job,
        task_dir=task_dir,
        secrets=secrets,
        task_id=task_id,
        recovery_count=recovery_count,
        managed_job_id=managed_job_id,
        on_event=on_event,
        on_log=on_log,
        session=session,
    )
    mark_ready(db, record, job, run.job)
    return session, run
