"""Cancelling managed jobs. The controller does the work (it watches `cancel_requested`);
when a job's controller is gone, cancelling tears the job's clusters down itself.

A managed job's cluster belongs to its controller: `skyform down` refuses it and points to
`skyform jobs cancel` (as SkyPilot refuses to take down a controller with jobs in progress)."""

from __future__ import annotations

import time

from skyform.config import load_config
from skyform.errors import SkyformError
from skyform.lifecycle import clusters
from skyform.ops.managed.launch import controller_alive
from skyform.state.db import StateDB
from skyform.state.managed import ManagedJobRecord, ManagedJobs, ManagedJobStatus

WAIT_FOR_CONTROLLER = 60.0


def managed_owner_note(db: StateDB, name: str) -> str | None:
    """`cluster 'j1-x' runs managed job 1 (...)`, or None when no unfinished job runs there."""
    owner = ManagedJobs(db).owner_of(name)
    if owner is None:
        return None
    return (
        f"cluster {name!r} runs managed job {owner.id} ({owner.name}, {owner.status.value}); "
        f"cancel the job to take it down: skyform jobs cancel {owner.id}"
    )


def refuse_managed_clusters(db: StateDB, names: list[str]) -> None:
    """Refuse to tear down a cluster an unfinished managed job runs on."""
    jobs = ManagedJobs(db)
    for name in names:
        owner = jobs.owner_of(name)
        if owner is not None:
            raise SkyformError(
                f"cluster {name!r} runs managed job {owner.id} ({owner.name}, "
                f"{owner.status.value}); its controller would only relaunch it",
                f"Cancel the job instead (its clusters go down with it): "
                f"skyform jobs cancel {owner.id}",
            )


def cancel_jobs(db: StateDB, job_ids: list[int] | None) -> list[ManagedJobRecord]:
    jobs = ManagedJobs(db)
    targets = (
        [jobs.require(i) for i in job_ids]
        if job_ids is not None
        else [r for r in jobs.list() if not r.status.is_terminal]
    )
    done = []
    for record in targets:
        if record.status.is_terminal:
            done.append(record)
            continue
        record = jobs.transition(
            record, ManagedJobStatus.CANCELLING, "cancel requested", cancel_requested=True
        )
        if controller_alive(record.id):
            record = _wait_for_controller(jobs, record.id)
        if not record.status.is_terminal:  # no controller to do it
            config = load_config()
            for task in record.tasks:
                cluster = db.get_cluster(task.cluster)
                if cluster is not None:
                    clusters.destroy(
                        db, config, cluster, reason="managed job cancelled", emit=lambda _m: None
                    )
            record = jobs.transition(
                jobs.require(record.id), ManagedJobStatus.CANCELLED, "cancelled by the user"
            )
        done.append(record)
    return done


def _wait_for_controller(jobs: ManagedJobs, job_id: int) -> ManagedJobRecord:
    deadline = time.monotonic() + WAIT_FOR_CONTROLLER
    while time.monotonic() < deadline:
        record = jobs.require(job_id)
        if record.status.is_terminal or not controller_alive(job_id):
            return record
        time.sleep(0.2)
    return jobs.require(job_id)
