"""The managed-job controller: one detached process per job, run as
`python -m skyform.ops.managed.controller JOB_ID`.

It runs the pipeline's tasks in dependency order; for each, provisions from the current plan
revision, submits, probes until the task ends and copies the job's output as it goes.
Preemption → recovery (re-plan around the lost placement into a new revision, tear down,
relaunch, resume with the same task id and a higher recovery count; no capacity → retry with
backoff until `recovery.give_up_after`). User failure → restart or fail, per the policy. A
cluster torn down or replaced behind the job's back is a lost cluster, never a crash. All of
its state is in state.db, so a controller started again after being killed carries on where it
was.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import time
import traceback

from skyform.controllers.lease import die_with_service, holding, job_lease
from skyform.errors import (
    WAITING_DOES_NOT_HELP,
    CapacityError,
    ExecError,
    Fenced,
    LockedError,
    NodeUnreachable,
    NoOffersError,
    SkyformError,
    StackError,
    StalePlanError,
)
from skyform.exec.run import ClusterSession
from skyform.lifecycle.cluster_job import job_key
from skyform.ops.managed import attempt, jobdir, sealed
from skyform.ops.managed.branches import Cancelled, run_branches
from skyform.ops.managed.job_controls import JobControls
from skyform.ops.managed.logmirror import LogMirror, attempt_logs
from skyform.ops.managed.revisions import load_dag, make_revision
from skyform.recovery.detect import Monitor, Observation, Outcome
from skyform.recovery.policy import (
    Failure,
    Remedy,
    StepFailure,
    decide,
    give_up,
    next_wait,
    no_capacity_reason,
    relaunch_steps,
)
from skyform.stacks.registry import engine_for
from skyform.state.managed import ManagedJobStatus
from skyform.state.models import ClusterRecord, ClusterStatus, JobRecord, JobStatus

# a cluster another command holds for longer than the lock's wait is asked for again then
LOCKED_RETRY_SECONDS = 5.0
# a stale revision (its cluster changed by someone else since) is planned again, as a relaunch
RELAUNCH_ERRORS = (
    NoOffersError,
    CapacityError,
    StackError,
    NodeUnreachable,
    ExecError,
    StalePlanError,
)


class NoResources(Exception):
    pass


class PrechecksFailed(Exception):
    """Every relaunch of a round failed for a reason waiting does not cure."""


class Controller(JobControls):
    """Runs the job: its tasks in order (run_task), each watched to its end (watch, settle),
    relaunched when lost (recover)."""

    # -- the job -------------------------------------------------------------------------------

    def run(self) -> ManagedJobStatus:
        record = self.record
        if record.status.is_terminal:
            return record.status
        self.jobs.put(
            record.model_copy(
                update={
                    "controller_pid": os.getpid(),
                    "controller_starts": record.controller_starts + 1,
                }
            )
        )
        self.log(f"controller start {record.controller_starts + 1} (pid {os.getpid()})")
        try:
            if sealed.materialise(self.db, self.job_id):
                self.log("task and inputs read from the state store (launched elsewhere)")
            if self.store_copy is not None:  # output a controller before this one left behind
                self.store_copy.flush(attempt_logs(self.job_id), force=True)
            final = run_branches(
                self, load_dag(record), lambda: Controller(self.job_id, self.shared)
            )
            if final is not ManagedJobStatus.SUCCEEDED:
                self.teardown_all(f"job {final.value}")
                self.set_status(final, self.record.reason or f"a task ended {final.value}")
                return final
            self.teardown_all("job group ended")  # tasks stopped when the primaries ended
            self.set_status(ManagedJobStatus.SUCCEEDED, "every task succeeded")
            return ManagedJobStatus.SUCCEEDED
        except Cancelled:
            self.teardown_all("cancelled")
            self.set_status(ManagedJobStatus.CANCELLED, "cancelled by the user")
            return ManagedJobStatus.CANCELLED
        except NoResources as exc:
            self.teardown_all("no resources")
            self.set_status(ManagedJobStatus.FAILED_NO_RESOURCE, str(exc))
            return ManagedJobStatus.FAILED_NO_RESOURCE
        except PrechecksFailed as exc:
            self.log(f"failed: {exc}")
            self.teardown_all("launch refused")
            self.set_status(ManagedJobStatus.FAILED_PRECHECKS, str(exc))
            return ManagedJobStatus.FAILED_PRECHECKS
        except Exception as exc:
            self.log(traceback.format_exc())
            self.teardown_all("controller failure")
            message = exc.message if isinstance(exc, SkyformError) else repr(exc)
            self.set_status(ManagedJobStatus.FAILED_CONTROLLER, f"controller failed: {message}")
            return ManagedJobStatus.FAILED_CONTROLLER
        finally:
            if self.record.status.is_terminal:
                sealed.forget_secrets(self.db, self.job_id)

    # -- one task ------------------------------------------------------------------------------

    def run_task(self, index: int, secrets: dict[str, str]) -> ManagedJobStatus:
        while True:
            self.check_cancel()
            task = self.record.task(index)
            if task.status is ManagedJobStatus.PENDING:
                task = self.update_task(
                    task, status=ManagedJobStatus.STARTING, started_at=time.time()
                )
            if self.record.status in (ManagedJobStatus.PENDING,):
                self.set_status(ManagedJobStatus.STARTING, f"starting task {task.name}")
            try:
                cluster = attempt.provision(self.db, self.config, self.record, task, self.log)
            except LockedError as err:  # a command holds the cluster past the lock's wait
                self.log(f"{task.cluster}: {err.message}; trying again")
                self.sleep(LOCKED_RETRY_SECONDS)
                continue
            except RELAUNCH_ERRORS as err:
                self.recover(index, f"could not launch: {error_text(err)}")
                continue
            if self.shared.group is not None and cluster.handle is not None:
                self.shared.group.arrive(
                    index, cluster.handle, check=self.check_cancel, log=self.log
                )
            _, placement = attempt.latest_placement(self.db, self.record, task)
            task = self.update_task(task, offer=placement.offer)
            try:
                session, job = attempt.submit(
                    self.db, self.record, task, cluster, placement, secrets, self.log
                )
            except ExecError as err:
                gone = attempt.taken_away(self.db, cluster, by=f"managed job {self.job_id}")
                if gone is None and not isinstance(err, NodeUnreachable):
                    raise
                self.recover(index, gone or f"nodes did not answer: {err.message}")
                continue
            with session:
                task = self.update_task(task, cluster_job_id=job.job_id)
                mirror = LogMirror(
                    session,
                    job_key(job),
                    self.job_id,
                    index,
                    task.recovery_count,
                    job.job_id,
                    self.store_copy,
                )
                outcome, detail, codes = self.watch(session, cluster, job, mirror)
            verdict = self.settle(index, outcome, detail, codes)
            if verdict is not None:
                return verdict

    def watch(
        self, session: ClusterSession, cluster: ClusterRecord, job: JobRecord, mirror: LogMirror
    ) -> tuple[Outcome, str, dict[int, int | None]]:
        if job.status is JobStatus.FAILED_SETUP:
            return Outcome.FAILED_SETUP, "setup failed", job.exit_codes
        task = self.record.task(self._index_of(cluster.name))
        ran_again = task.status is ManagedJobStatus.RECOVERING  # the recovery now counts
        self.update_task(
            task,
            status=ManagedJobStatus.RUNNING,
            recoveries=task.recoveries + 1 if ran_again else task.recoveries,
        )
        self.set_status(ManagedJobStatus.RUNNING, f"job {job.job_id} running on {cluster.name}")
        assert cluster.handle is not None
        engine = engine_for(cluster.spec.offer.cloud, config=self.config, state=self.db)
        monitor = Monitor(
            session, engine, cluster.handle, job_key(job), lost_after=self.record.lost_after
        )
        try:
            while True:
                self.check_cancel()
                seen = self._observe(monitor, cluster)
                mirror.pull(to_the_end=seen.outcome is not None)
                if seen.outcome is not None:
                    self.log(f"{cluster.name}: {seen.outcome.value}: {seen.detail}")
                    return seen.outcome, seen.detail, seen.exit_codes
                time.sleep(self.record.check_interval)
        except Cancelled:
            try:  # stop the job first, so its copied output ends where the job did
                session.cancel(job_key(job))
            except ExecError as err:
                self.log(f"could not cancel job {job.job_id} on {cluster.name}: {err.message}")
            mirror.pull(to_the_end=True)
            raise

    def _observe(self, monitor: Monitor, cluster: ClusterRecord) -> Observation:
        """A probe. A cluster torn down or replaced behind the job's back is a lost cluster
        (a preemption), whatever its killed processes said as they went."""
        seen = monitor.probe()
        if seen.outcome is Outcome.SUCCEEDED:
            return seen
        by = f"managed job {self.job_id}"
        gone = attempt.taken_away(self.db, cluster, by=by, wait=seen.outcome is not None)
        if gone is not None:
            return Observation(Outcome.PREEMPTED, gone, seen.exit_codes)
        return seen

    def _index_of(self, cluster: str) -> int:
        return next(t.index for t in self.record.tasks if t.cluster == cluster)

    def settle(
        self, index: int, outcome: Outcome, detail: str, codes: dict[int, int | None]
    ) -> ManagedJobStatus | None:
        """What the outcome means for the task; None when the task goes on (restart/recover)."""
        task = self.record.task(index)
        attempt.close_cluster_job(self.db, task, outcome, detail, codes)
        if outcome is Outcome.SUCCEEDED:
            self._destroy(task, "task succeeded")
            self.update_task(
                self.record.task(index), status=ManagedJobStatus.SUCCEEDED, ended_at=time.time()
            )
            return ManagedJobStatus.SUCCEEDED
        if outcome is Outcome.CANCELLED:
            self.check_cancel()  # the user's cancel, or this branch told to stop
            raise Cancelled()
        failure = {
            Outcome.PREEMPTED: Failure.PREEMPTED,
            Outcome.FAILED: Failure.USER,
            Outcome.FAILED_SETUP: Failure.SETUP,
        }[outcome]
        decision = decide(
            failure, exit_codes=codes, restarts_done=task.restarts, policy=self.policy()
        )
        self.log(f"decision: {decision.action.value}: {decision.reason}")
        if decision.action is Remedy.RESTART:  # runs again at once, on the same cluster
            self.update_task(
                task,
                restarts=task.restarts + 1,
                recovery_count=task.recovery_count + 1,
                recoveries=task.recoveries + 1,
                cluster_job_id=None,
            )
            with self.shared.lock:
                self.jobs.transition(self.record, ManagedJobStatus.RUNNING, decision.reason)
            return None
        if decision.action is Remedy.RECOVER:
            self.recover(index, detail if failure is Failure.PREEMPTED else decision.reason)
            return None
        self._destroy(task, decision.reason)
        final = (
            ManagedJobStatus.FAILED_SETUP if failure is Failure.SETUP else ManagedJobStatus.FAILED
        )
        self.update_task(self.record.task(index), status=final, ended_at=time.time())
        with self.shared.lock:
            self.jobs.put(self.record.model_copy(update={"reason": decision.reason}))
        return final

    # -- recovery ------------------------------------------------------------------------------

    def recover(self, index: int, why: str) -> None:
        """Re-plan around the lost placement and bring a new cluster up (the job is submitted
        by run_task's next turn), round after round with backoff until capacity comes back or
        the policy gives up (NoResources). A task whose launch failed is retried the same way."""
        task = self.record.task(index)
        launching = task.status is ManagedJobStatus.STARTING  # it never ran: not a recovery
        if not launching:
            self.set_status(ManagedJobStatus.RECOVERING, why)
        cluster = self.db.get_cluster(task.cluster)
        if cluster is not None and cluster.status is not ClusterStatus.LOST:
            self.db.set_cluster_status(task.cluster, ClusterStatus.LOST)
        lost = task.offer or (cluster.spec.offer if cluster is not None else None)
        if lost is None:  # refused before anything was made: around what was planned
            lost = attempt.latest_placement(self.db, self.record, task)[1].offer
        task = self.update_task(
            task,
            recovery_count=task.recovery_count + 1,
            cluster_job_id=None,
            status=task.status if launching else ManagedJobStatus.RECOVERING,
        )
        policy = self.policy()
        steps = relaunch_steps(
            policy.strategy, lost, why="no capacity" if launching else "preempted"
        )
        remaining = [
            t.index for t in self.record.tasks if t.status is not ManagedJobStatus.SUCCEEDED
        ]
        rounds: list[list[StepFailure]] = []
        started = time.monotonic()
        while True:
            self.sleep(next_wait(len(rounds), time.monotonic() - started, policy))
            failures = []
            incurable = 0  # failures waiting does not cure (credentials, SDK, quota)
            for step in steps:
                self.check_cancel()
                try:
                    with self.shared.lock:  # branches recovering at once: one revision each
                        rev = make_revision(
                            self.db,
                            self.record,
                            tasks=remaining,
                            blocked=step.blocked,
                            allowed=step.allowed,
                            kind="recovery",
                            reason=f"recovery {task.recovery_count} of task {task.name}: "
                            f"{why}; {step.description}",
                        )
                        self.jobs.put(
                            self.record.model_copy(update={"revision": rev.revision.revision})
                        )
                    self.log(f"plan revision {rev.revision.revision}: {step.description}")
                    attempt.provision(
                        self.db, self.config, self.record, self.record.task(index), self.log
                    )
                    return
                except RELAUNCH_ERRORS as err:
                    failure = StepFailure(step=step.description, error=error_text(err))
                    failures.append(failure)
                    incurable += isinstance(err, WAITING_DOES_NOT_HELP)
                    text = f"round {len(rounds) + 1}, {failure.step}: {failure.error}"
                    self.log(f"relaunch failed: {text}")
                    self.db.add_event(
                        "managed.relaunch_failed", text, data={"managed_job_id": self.job_id}
                    )
                    self._destroy_quietly(task.cluster, "relaunch failed")
            rounds.append(failures)
            if incurable == len(failures):  # SkyPilot's FAILED_PRECHECKS: no retry cures it
                raise PrechecksFailed(
                    f"task {task.name} cannot launch: "
                    + "; ".join(dict.fromkeys(f.error for f in failures))
                )
            elapsed = time.monotonic() - started
            if give_up(len(rounds), elapsed, policy):
                raise NoResources(no_capacity_reason(task.name, rounds, elapsed, policy))


def error_text(err: Exception) -> str:
    return err.message if isinstance(err, SkyformError) else str(err)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    job_id = int(args[0])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stdout)
    if not die_with_service():
        logging.info("the service that started the controller of job %s is gone; exiting", job_id)
        return 0
    lock = open(jobdir.controller_lock(job_id), "a")  # noqa: SIM115 - held for the lifetime
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        logging.info("another controller holds job %s; exiting", job_id)
        return 0
    with holding(job_lease(job_id)) as db:
        if db is None:
            logging.info("another controller drives job %s; exiting", job_id)
            return 0
        try:
            status = Controller(job_id).run()
        except Fenced as stop:  # another controller drives the job now: nothing more from here
            logging.info("managed job %s: %s", job_id, stop.message)
            return 0
    logging.info("managed job %s ended: %s", job_id, status.value)
    return 0


if __name__ == "__main__":
    sys.exit(main())
