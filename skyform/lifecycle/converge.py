"""Converge a cluster and its job on a planned change: the steps `apply`/`launch` and the
managed-job controller share, so a cluster is brought up and a job started the same way
whoever asks.

- `converge_cluster`: no cluster yet → provision it from the spec (with the nodes a recovery
  salvaged, if any); an INIT cluster (a killed apply's) → resume it, keeping what exists.
- `update_in_place`: a cluster that keeps its nodes takes the new spec — its stack updates
  what it can change in place (ports, labels), its node agent a new autostop setting.
- `run_job`: sync, set up and submit the job (lifecycle/cluster_job.py), then record the cluster UP
  with its setup marker — unless setup just failed, which keeps the old marker. `exec` takes
  the same path on a cluster that is UP (`require_up`), without setup: the record stays.
Deciding *whether* to converge (plan actions, recovery policy, ownership) stays with callers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from skyform.config import Config
from skyform.errors import SkyformError, StateError
from skyform.exec.run import ClusterSession
from skyform.infra import updates_in_place
from skyform.lifecycle import clusters
from skyform.lifecycle.cluster_job import JobRun, LogSink, NodeEvent, mark_ready, start_job
from skyform.plan.model import ClusterSpec, JobSpec
from skyform.state.db import StateDB
from skyform.state.models import ClusterHandle, ClusterRecord, ClusterStatus

Stage = Callable[[str, str], None]  # (stage, detail): a step worth telling the user about


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


def update_in_place(
    db: StateDB,
    config: Config,
    record: ClusterRecord,
    spec: ClusterSpec,
    updates: Collection[str],
    *,
    source: str | None,
    plan_digest: str | None,
    stage: Stage,
    emit: clusters.Emit,
) -> ClusterRecord:
    """The cluster keeps its nodes and takes `spec`; `updates` names what changed in place
    (`ports`, `labels` through its stack where its infra can, `autostop` on its head node)."""
    stack = sorted(set(updates) - {"autostop"})
    if stack and updates_in_place(spec.offer.cloud):
        from skyform.stacks.registry import engine_for

        stage("update", ", ".join(stack))
        engine = engine_for(spec.offer.cloud, config=config, state=db, plan_digest=plan_digest)
        record = record.model_copy(update={"handle": engine.up(spec, emit)})
    record = clusters.update_spec(db, record, spec, plan_digest, source=source)
    if "autostop" in updates:
        from skyform.lifecycle.autostop import push_setting

        stage("autostop", record.spec.autostop_text)
        record = push_setting(db, config, record, spec.autostop)
    return record


def require_up(record: ClusterRecord, nodes: int) -> None:
    """A cluster a job can run on as it is (`exec`): it has nodes, is not stopped, and has
    at least `nodes` of them."""
    name = record.name
    if record.handle is None:
        raise SkyformError(
            f"cluster {name!r} has no nodes (status {record.status.value})",
            "Apply its plan first.",
        )
    if record.status is ClusterStatus.STOPPED:  # `sky exec` refuses a stopped cluster too
        raise SkyformError(f"cluster {name!r} is STOPPED", f"Start it first: skyform start {name}")
    if nodes > len(record.handle.nodes):
        raise SkyformError(
            f"the task wants {nodes} nodes; cluster {name!r} has {len(record.handle.nodes)}",
            "Plan and apply it as its own cluster instead.",
        )


def run_job(
    db: StateDB,
    record: ClusterRecord,
    job: JobSpec,
    *,
    task_dir: Path,
    secrets: Mapping[str, str],
    setup: bool = True,
    task_id: str | None = None,
    recovery_count: int = 0,
    managed_job_id: int | None = None,
    on_event: NodeEvent | None = None,
    on_log: LogSink | None = None,
    session: ClusterSession | None = None,
) -> tuple[ClusterSession, JobRun]:
    """Start `job` on the cluster (see start_job) and record the cluster ready; the caller
    follows or closes the session. Without `setup` (`exec`), setup is not run and the
    cluster's record is left as it is: only the job is new."""
    session, run = start_job(
        db,
        record,
        job,
        task_dir=task_dir,
        secrets=secrets,
        run_setup=setup,
        task_id=task_id,
        recovery_count=recovery_count,
        managed_job_id=managed_job_id,
        on_event=on_event,
        on_log=on_log,
        session=session,
    )
    if setup:
        mark_ready(db, record, job, run.job)
    return session, run
