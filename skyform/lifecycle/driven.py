"""Clusters a controller drives: how a managed job's controller and a service's controller
bring up the clusters of their work (a job's task, a replica) and start its job on them.

Both take the same steps, in this order, so a cluster is made and a job started the same
way whichever controller asks:
- `driving`: the cluster's lock, held in the controller's name (`managed job 3`, `service
  web`), which is also what the state records as having changed the cluster (so a `down`
  meanwhile names it, and a revision made by the same controller stays fresh);
- `bring_up`: converge_cluster (a new cluster, the nodes a recovery salvaged, or an INIT
  one a killed controller left), recorded as `<kind>.provisioned` with the reason;
- `start_detached`: the job's text and synced workdir recorded on the cluster (what `exec`,
  `status` and the next plan read), then run_job — sync, mounts, setup, submit — whose
  session the controller follows or closes.
What to launch and when (plan revisions, recovery policy, autoscaling) stays with the
controllers; the apply path (lifecycle/converge.py's other caller) adds the checks a saved
plan reviewed by a person needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skyform.config import Config
from skyform.exec.run import ClusterSession
from skyform.lifecycle.cluster_job import JobRun, synced_workdir
from skyform.lifecycle.converge import converge_cluster, run_job
from skyform.plan.model import ClusterSpec, JobSpec
from skyform.state.db import StateDB
from skyform.state.lock import cluster_lock
from skyform.state.models import ClusterHandle, ClusterRecord

Log = Callable[[str], None]

# a controller waits out a command that holds its cluster (a `down`, a `status --refresh`)
# rather than failing its work for it
LOCK_WAIT = 60.0


@dataclass(frozen=True)
class Driver:
    """The controller a cluster is brought up for."""

    name: str  # `managed job 3`, `service web`: its lock's holder, the cluster's changer
    kind: str  # `managed`, `serve`: its events' prefix
    data: Mapping[str, Any] = field(default_factory=dict)  # what its events carry
    managed_job_id: int | None = None  # the usage intervals and jobs of a managed job


@contextmanager
def driving(db: StateDB, cluster: str, by: str) -> Iterator[None]:
    """Hold `cluster`'s lock for the controller `by` (up to LOCK_WAIT seconds to take it),
    its changes recorded as made by `by`."""
    before = db.acting_for
    with cluster_lock(cluster, wait=LOCK_WAIT, purpose=by):
        db.acting_for = by
        try:
            yield
        finally:
            db.acting_for = before


def bring_up(
    db: StateDB,
    config: Config,
    spec: ClusterSpec,
    driver: Driver,
    *,
    current: ClusterRecord | None,
    reason: str,
    source: str | None,
    plan_digest: str | None,
    log: Log,
    keep: ClusterHandle | None = None,
) -> ClusterRecord:
    """The cluster `spec` describes, made (or `current`, an INIT one, resumed) for
    `driver` because of `reason` (`launch`, `recovery 2`, `service web revision 3 (up)`:
    what the cluster's usage records, `cost-report` shows). Call it while `driving`."""
    record = converge_cluster(
        db,
        config,
        spec,
        current,
        source=source,
        plan_digest=plan_digest,
        emit=log,
        managed_job_id=driver.managed_job_id,
        reason=reason,
        keep=keep,
    )
    db.add_event(
        f"{driver.kind}.provisioned",
        f"{spec.name} on {spec.offer.infra} for {driver.name} ({reason})",
        cluster=spec.name,
        data={**driver.data, "reason": reason},
    )
    return record


def start_detached(
    db: StateDB,
    record: ClusterRecord,
    job: JobSpec,
    driver: Driver,
    *,
    task_dir: Path,
    secrets: Mapping[str, str],
    log: Log,
    task_id: str | None = None,
    recovery_count: int = 0,
    session: ClusterSession | None = None,
) -> tuple[ClusterSession, JobRun]:
    """Sync, set up and submit `job` on the cluster; the caller follows or closes the
    session. The cluster records the job and the workdir as synced now (as `apply` does),
    so `exec` keeps its mounts and a plan compares against it. Call it while `driving`."""
    from skyform.exec.manifest import workdir_files

    workdir = synced_workdir(job, task_dir, secrets)
    record = record.model_copy(
        update={
            "job": job,
            "workdir_files": workdir_files(workdir) if workdir is not None else None,
        }
    )
    name = record.name
    return run_job(
        db,
        record,
        job,
        task_dir=task_dir,
        secrets=secrets,
        task_id=task_id,
        recovery_count=recovery_count,
        managed_job_id=driver.managed_job_id,
        on_event=lambda stage, rank, msg: log(f"{name} node {rank}: {stage}: {msg}"),
        session=session,
    )
