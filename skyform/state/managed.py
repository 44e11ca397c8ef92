"""Managed jobs in state: the upper level of the two-level state machine (their plan
revisions are state/revisions.py's).

Two levels, as SkyPilot: a cluster job (JobStatus) runs one task on one cluster; a managed
job (ManagedJobStatus) runs a pipeline across recoveries. A preemption flips the lower level
(the cluster job fails, its cluster is lost); the upper one goes RUNNING → RECOVERING →
RUNNING. Every transition is an event with a timestamp and a reason.
"""

from __future__ import annotations

import builtins
import time
from enum import Enum

from skyform.errors import StateError
from skyform.frozen import Stored as _Model
from skyform.plan.model import PlacedOffer
from skyform.spec.recovery import Strategy
from skyform.state.db import StateDB
from skyform.state.models import Event
from skyform.state.records import dump_record, load_record
from skyform.state.revisions import Revisions, job_owner


class ManagedJobStatus(str, Enum):
    PENDING = "PENDING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    RECOVERING = "RECOVERING"
    CANCELLING = "CANCELLING"
    SUCCEEDED = "SUCCEEDED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"
    FAILED_SETUP = "FAILED_SETUP"
    FAILED_NO_RESOURCE = "FAILED_NO_RESOURCE"
    # the launch failed for a reason waiting does not cure (credentials, SDK, quota)
    FAILED_PRECHECKS = "FAILED_PRECHECKS"
    FAILED_CONTROLLER = "FAILED_CONTROLLER"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset(
    {
        ManagedJobStatus.SUCCEEDED,
        ManagedJobStatus.CANCELLED,
        ManagedJobStatus.FAILED,
        ManagedJobStatus.FAILED_SETUP,
        ManagedJobStatus.FAILED_NO_RESOURCE,
        ManagedJobStatus.FAILED_PRECHECKS,
        ManagedJobStatus.FAILED_CONTROLLER,
    }
)


class ManagedTask(_Model):
    index: int
    name: str
    cluster: str
    status: ManagedJobStatus = ManagedJobStatus.PENDING
    cluster_job_id: int | None = None  # the current cluster job running this task
    recovery_count: int = 0  # attempts after the first (SKYFORM_RECOVERY_COUNT of this one)
    restarts: int = 0  # restarts after a user failure (max_restarts_on_errors counts these)
    recoveries: int = 0  # times the task ran again: see ManagedJobRecord.recoveries
    offer: PlacedOffer | None = None  # where the current attempt was launched
    started_at: float | None = None
    ended_at: float | None = None


class ManagedJobRecord(_Model):
    id: int
    name: str
    status: ManagedJobStatus = ManagedJobStatus.PENDING
    task_file: str  # absolute path of the task file as launched (workdir is relative to it)
    # the job's workdir and local file-mount sources on the launching machine, absolute: a
    # controller runs the job only where they exist (they are synced from there, not stored)
    local_paths: tuple[str, ...] = ()
    objective: str = "cost"
    strategy: str = Strategy.EAGER_NEXT_REGION.value
    max_restarts_on_errors: int = 0
    recover_on_exit_codes: tuple[int, ...] = ()
    give_up_after: float | None = 24 * 3600.0  # recovery.give_up_after at launch
    max_rounds: int | None = None  # recovery.max_rounds at launch
    check_interval: float = 2.0
    lost_after: int = 2  # failed probes in a row before a node counts as lost
    tasks: list[ManagedTask]
    revision: int = 0
    controller_pid: int | None = None
    controller_starts: int = 0
    cancel_requested: bool = False
    reason: str = ""
    submitted_at: float
    ended_at: float | None = None

    def task(self, index: int) -> ManagedTask:
        return self.tasks[index]

    def recoveries(self) -> int:
        """#RECOVERIES (jobs queue, cost-report), as SkyPilot counts it: how many times a task
        of the job ran again after a preemption or a restart after a user failure. A recovery
        counts once the task runs again; one still in progress, or one that found no
        capacity, does not."""
        return sum(t.recoveries for t in self.tasks)

    def with_task(self, task: ManagedTask) -> ManagedJobRecord:
        tasks = [task if t.index == task.index else t for t in self.tasks]
        return self.model_copy(update={"tasks": tasks})


def _managed(text: str, job_id: int, where: str) -> ManagedJobRecord:
    return load_record(ManagedJobRecord, text, what=f"managed job {job_id}", where=where)


class ManagedJobs:
    """Managed-job persistence on top of a StateDB (same database, same transactions)."""

    def __init__(self, db: StateDB) -> None:
        self.db = db

    def create(self, record: ManagedJobRecord) -> ManagedJobRecord:
        with self.db.transaction() as conn:
            row = conn.execute(
                "INSERT INTO managed_jobs (status, record, updated_at) VALUES (?, ?, ?) "
                "RETURNING id",
                (record.status.value, "{}", time.time()),
            ).fetchone()
            job_id = int(row["id"])
            record = record.model_copy(update={"id": job_id})
            conn.execute(
                "UPDATE managed_jobs SET record=? WHERE id=?", (dump_record(record), job_id)
            )
        return record

    def get(self, job_id: int) -> ManagedJobRecord | None:
        row = self.db.execute("SELECT record FROM managed_jobs WHERE id=?", (job_id,)).fetchone()
        return _managed(row["record"], job_id, self.db.where) if row else None

    def require(self, job_id: int) -> ManagedJobRecord:
        record = self.get(job_id)
        if record is None:
            raise StateError(f"no managed job {job_id}", "See them with: skyform jobs queue")
        return record

    def list(self) -> list[ManagedJobRecord]:
        rows = self.db.execute("SELECT id, record FROM managed_jobs ORDER BY id").fetchall()
        return [_managed(r["record"], r["id"], self.db.where) for r in rows]

    def put(self, record: ManagedJobRecord) -> None:
        with self.db.transaction() as conn:
            sql = "SELECT record FROM managed_jobs WHERE id=?"
            row = conn.execute(sql, (record.id,)).fetchone()
            if row is not None and not record.cancel_requested:
                # a cancel is never lost to a write made from an older read (controller vs CLI)
                stored = _managed(row["record"], record.id, self.db.where)
                if stored.cancel_requested:
                    record = record.model_copy(update={"cancel_requested": True})
            conn.execute(
                "UPDATE managed_jobs SET status=?, record=?, updated_at=? WHERE id=?",
                (record.status.value, dump_record(record), time.time(), record.id),
            )

    def transition(
        self, record: ManagedJobRecord, status: ManagedJobStatus, reason: str, **updates
    ) -> ManagedJobRecord:
        """Change the managed job's status and record the transition as an event."""
        before = record.status
        if status.is_terminal and record.ended_at is None:
            updates.setdefault("ended_at", time.time())
        record = record.model_copy(update={"status": status, "reason": reason, **updates})
        self.put(record)
        self.db.add_event(
            "managed." + status.value.lower(),
            reason,
            data={"managed_job_id": record.id, "from": before.value, "to": status.value},
        )
        return record

    def delete(self, job_id: int) -> None:
        """Forget a managed job and its plan revisions (one that never started)."""
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM managed_jobs WHERE id=?", (job_id,))
            Revisions(self.db).delete(job_owner(job_id))
            conn.execute("DELETE FROM managed_inputs WHERE job_id=?", (job_id,))
            conn.execute("DELETE FROM managed_logs WHERE job_id=?", (job_id,))

    def refresh(self, record: ManagedJobRecord) -> ManagedJobRecord:
        return self.require(record.id)

    # -- sealed inputs (ops/managed/sealed.py seals and opens them) ------------------------

    def put_inputs(self, job_id: int, task_digest: str, sealed: str) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO managed_inputs (job_id, task_digest, sealed, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(job_id) DO UPDATE SET "
                "task_digest=excluded.task_digest, sealed=excluded.sealed, "
                "updated_at=excluded.updated_at",
                (job_id, task_digest, sealed, time.time()),
            )

    def get_inputs(self, job_id: int) -> tuple[str, str] | None:
        """(task_digest, sealed) of the job's stored inputs, if the store has them."""
        row = self.db.execute(
            "SELECT task_digest, sealed FROM managed_inputs WHERE job_id=?", (job_id,)
        ).fetchone()
        return (row["task_digest"], row["sealed"]) if row else None

    def owner_of(self, cluster: str) -> ManagedJobRecord | None:
        """The unfinished managed job whose task runs on `cluster`, if any."""
        for record in self.list():
            if not record.status.is_terminal and any(t.cluster == cluster for t in record.tasks):
                return record
        return None

    def transitions(self, job_id: int) -> builtins.list[Event]:
        return [
            e
            for e in self.db.events()
            if e.kind.startswith("managed.") and e.data.get("managed_job_id") == job_id
        ]
