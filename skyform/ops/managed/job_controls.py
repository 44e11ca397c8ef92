"""What the managed-job controller acts through: its job's record (read fresh from state),
task and status updates, cancel / stop checks, a sleep that honours them, the recovery policy
the job was launched with, and tearing its clusters down. controller.Controller runs the job
on these; branches.py's parallel branches share them (one lock, one stop event).
"""

from __future__ import annotations

import logging
import time

from skyform.config import load_config
from skyform.errors import SkyformError
from skyform.lifecycle import clusters
from skyform.ops.managed import attempt
from skyform.ops.managed.branches import Cancelled, Shared, Stopped
from skyform.ops.managed.logstore import StoreCopy
from skyform.recovery.policy import RecoveryPolicy
from skyform.spec.recovery import Strategy
from skyform.state import fencing
from skyform.state.db import open_state
from skyform.state.managed import ManagedJobRecord, ManagedJobs, ManagedJobStatus, ManagedTask


class JobControls:
    def __init__(self, job_id: int, shared: Shared | None = None) -> None:
        self.job_id = job_id
        self.shared = shared or Shared()
        self.db = open_state()
        self.db.acting_for = attempt.acting_for(job_id)  # its own changes keep revisions fresh
        self.jobs = ManagedJobs(self.db)
        self.config = load_config()
        self.log_ = logging.getLogger(f"skyform.controller.{job_id}")
        # the job's output to the team's store too (None: embedded store, or no passphrase)
        self.store_copy = StoreCopy.for_job(self.db, job_id, self.log)

    # -- small helpers -------------------------------------------------------------------------

    def log(self, message: str) -> None:
        self.log_.info(message)

    @property
    def record(self) -> ManagedJobRecord:
        return self.jobs.require(self.job_id)

    def update_task(self, task: ManagedTask, **changes) -> ManagedTask:
        with self.shared.lock:
            task = self.record.task(task.index).model_copy(update=changes)
            self.jobs.put(self.record.with_task(task))
        return task

    def set_status(self, status: ManagedJobStatus, reason: str) -> None:
        with self.shared.lock:
            record = self.record
            if record.status is not status:
                self.log(f"{record.status.value} → {status.value}: {reason}")
                self.jobs.transition(record, status, reason)

    def check_cancel(self) -> None:
        fencing.raise_if_lost()  # the job's lease was taken by another controller
        if self.record.cancel_requested:
            raise Cancelled()
        if self.shared.stop.is_set():
            raise Stopped()

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.check_cancel()
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))

    def policy(self) -> RecoveryPolicy:
        r = self.record
        return RecoveryPolicy(
            strategy=Strategy.parse(r.strategy),
            max_restarts_on_errors=r.max_restarts_on_errors,
            recover_on_exit_codes=r.recover_on_exit_codes,
            give_up_after=r.give_up_after,
            max_rounds=r.max_rounds,
        )

    def teardown_all(self, why: str) -> None:
        for task in self.record.tasks:
            self._destroy_quietly(task.cluster, why)

    def _destroy_quietly(self, name: str, why: str) -> None:
        """Tear a cluster down if it is still there; a failure is logged, not raised."""
        cluster = self.db.get_cluster(name)
        if cluster is not None:
            self.log(f"tearing down {name} ({why})")
            try:
                clusters.destroy(self.db, self.config, cluster, reason=why, emit=self.log)
            except SkyformError as err:
                self.log(f"could not tear down {name}: {err.message}")

    def _destroy(self, task: ManagedTask, why: str) -> None:
        cluster = self.db.get_cluster(task.cluster)
        if cluster is not None:
            clusters.destroy(self.db, self.config, cluster, reason=why, emit=self.log)
