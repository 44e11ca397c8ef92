"""What Ctrl-C, an error or `kill -9` leave behind: never a job stuck unstarted, never a
streaming command that takes the job down with it.

A job is INIT while the workdir syncs and SETTING_UP while setup runs; it is submitted when
its `run` starts on the nodes. An error before that (a node that does not answer, a failed
sync) makes it FAILED with the reason; Ctrl-C makes it CANCELLED after stopping what it
started on the nodes; a command killed outright (`kill -9`) leaves it to the next command
that owns the cluster, which settles it from the nodes (settle.py: CANCELLED unless the
nodes have its run, which a command killed right after the submission leaves). Ctrl-C while
following a submitted job stops the following only: the job keeps running, and the message
says how to re-attach (`detaching`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from skyform.errors import ExecError, Interrupted, SkyformError
from skyform.exec.node_jobs import run_key, setup_log_key
from skyform.exec.run import ClusterSession
from skyform.state.db import StateDB
from skyform.state.models import JobRecord, JobStatus


class Starting:
    """A job on its way to being submitted: its record as last written, and the step it is
    at, so that an error or Ctrl-C records how it ended instead of leaving it unstarted."""

    def __init__(self, db: StateDB, job: JobRecord) -> None:
        self.db, self.job, self.phase = db, job, "sync"
        db.put_job(job)

    def update(self, **changes) -> JobRecord:
        self.job = self.job.model_copy(update=changes)
        if self.job.status is JobStatus.SETTING_UP:
            self.phase = "setup"
        self.db.put_job(self.job)
        return self.job

    def abandon(self, session: ClusterSession | None, exc: BaseException) -> BaseException:
        """Record the job as ended by `exc`; the error to raise (Interrupted for Ctrl-C)."""
        job = self.job
        if job.status.is_terminal or job.started_at is not None or self.phase == "submitted":
            return exc  # submitted: it runs on the nodes, whatever happens here
        interrupted = isinstance(exc, KeyboardInterrupt)
        with ignoring_interrupts():
            if interrupted and session is not None:
                _stop_on_nodes(session, job, self.phase)
            if interrupted:
                reason = f"interrupted (Ctrl-C) during {PHASES[self.phase]}"
            else:
                detail = exc.message if isinstance(exc, SkyformError) else repr(exc)
                reason = f"could not start: {detail}"
            status = JobStatus.CANCELLED if interrupted else JobStatus.FAILED
            self.job = job.model_copy(
                update={"status": status, "ended_at": time.time(), "reason": reason}
            )
            self.db.put_job(self.job)
            self.db.add_event(
                "job." + status.value.lower(), reason, cluster=job.cluster, job_id=job.job_id
            )
        if not interrupted:
            return exc
        if self.phase == "setup":
            return Interrupted(
                f"Interrupted: setup was stopped on the nodes; job {job.job_id} on "
                f"{job.cluster} is CANCELLED.",
                "The cluster keeps its nodes: `skyform apply` again carries on from here (setup "
                f"runs again, nothing is provisioned again), or: skyform down {job.cluster}",
            )
        return Interrupted(
            f"Interrupted: job {job.job_id} on {job.cluster} is CANCELLED before it ran.",
            f"The cluster is as it was: run the command again, or: skyform down {job.cluster}",
        )


PHASES = {"sync": "the workdir sync", "setup": "setup", "submit": "the job's submission"}


def _stop_on_nodes(session: ClusterSession, job: JobRecord, phase: str) -> None:
    """After Ctrl-C: stop what this job started on the nodes (best effort, briefly)."""
    run = run_key(job.cluster, job.job_id, job.recovery_count)
    key = {"setup": job.setup_key, "submit": run}.get(phase)
    if key is None:
        return
    try:
        session.cancel(key, grace=2)
        if phase == "setup":
            session.keep_log(key, setup_log_key(run))
    except ExecError:
        pass  # a node that does not answer keeps what it ran; the job is CANCELLED anyway


@contextmanager
def ignoring_interrupts() -> Iterator[None]:
    """A second Ctrl-C must not cut short the recording of the first (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def detaching(job: JobRecord, *, others: Sequence[JobRecord] = ()) -> Iterator[None]:
    """Ctrl-C while following a submitted job stops the following, not the job."""
    try:
        yield
    except KeyboardInterrupt:
        also = "".join(f"; so does job {o.job_id} on {o.cluster}" for o in others)
        raise Interrupted(
            f"Stopped following: job {job.job_id} on {job.cluster} keeps running{also}.",
            f"Re-attach: skyform logs {job.cluster} {job.job_id} --follow · "
            f"cancel it: skyform cancel {job.cluster} {job.job_id}",
        ) from None


@contextmanager
def provisioning(cluster: str) -> Iterator[None]:
    """Ctrl-C while an engine brings a cluster up: it stays recorded (INIT) with what exists."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(
            f"Interrupted while provisioning {cluster}: it stays recorded (INIT) with what "
            "was made.",
            f"Apply again to carry on from there, or remove it: skyform down {cluster}",
        ) from None


def stop_stale_setups(db: StateDB, session: ClusterSession, cluster: str, keep: str) -> None:
    """Before setup `keep` starts: stop the other setups that jobs which never ran left on
    the nodes (an apply killed during setup, then the setup edited). The same setup still
    running is left alone — the new job waits for it instead of starting it again."""
    stale = {
        j.setup_key
        for j in db.list_jobs(cluster)
        if j.never_ran and j.status.is_terminal and j.setup_key not in (None, keep)
    }
    for key in sorted(k for k in stale if k is not None):
        # a setup that had ended stays as it ended; a node that does not answer is reported
        # by the setup that follows
        with contextlib.suppress(ExecError):
            session.cancel(key, grace=2)
