"""`apply`: carry out a saved plan, cluster by cluster, exactly as it was reviewed.

Order: lock every cluster the plan touches (sorted, so two applies cannot deadlock), refuse a
stale plan, resolve secrets, then walk the changes — destroys first, then the tasks in
dependency order. A task's job starts only after its parents' jobs succeeded. Locks are held
until every job is submitted; following logs happens after they are released.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from skyform.config import Config
from skyform.errors import PlanError
from skyform.exec.results import LogLine
from skyform.exec.run import ClusterSession
from skyform.lifecycle import clusters
from skyform.lifecycle.bucketmounts import attach_again
from skyform.lifecycle.cluster_job import JobRun, follow_job, synced_workdir
from skyform.lifecycle.converge import converge_cluster, run_job, update_in_place
from skyform.lifecycle.freshness import check_fresh, check_paths_start, task_must_exist
from skyform.lifecycle.interrupts import detaching
from skyform.lifecycle.interrupts import provisioning as _provisioning
from skyform.lifecycle.settle import nodes_on_demand, settle_unstarted
from skyform.ops.apply_checks import refuse_takeover, refuse_unrunnable
from skyform.ops.secrets import resolve_secrets
from skyform.plan.effects import in_place_updates, job_runs_again
from skyform.plan.model import Action, ClusterChange, Plan, TaskPlacement
from skyform.plan.ownership import Owner
from skyform.state.db import StateDB
from skyform.state.lock import cluster_lock
from skyform.state.models import ClusterRecord, ClusterStatus, JobRecord, JobStatus


class ApplyProgress(Protocol):
    def stage(self, cluster: str, stage: str, detail: str = "") -> None: ...

    def event(self, cluster: str, stage: str, rank: int | None, message: str) -> None: ...

    def log(self, cluster: str, line: LogLine) -> None: ...


@dataclass(frozen=True)
class ClusterOutcome:
    cluster: str
    action: Action
    job: JobRecord | None = None
    message: str = ""

    @property
    def failed(self) -> bool:
        return self.job is not None and self.job.status in (
            JobStatus.FAILED,
            JobStatus.FAILED_SETUP,
            JobStatus.CANCELLED,
        )


@dataclass
class ApplyOptions:
    detach: bool = False
    # `launch`: run the job again on clusters the plan leaves as they are (as `sky launch`
    # does); `apply` keeps Terraform's meaning, where "no changes" runs nothing.
    rerun_unchanged: bool = False
    secret_overrides: list[str] = field(default_factory=list)
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    lock_wait: float | None = None
    take_over: bool = False  # act on clusters that belong to another task file or job
    # the command as typed (`skyform launch task.yaml`): what a lock held meanwhile names,
    # rather than the unsaved plan's temporary path
    command: str | None = None


def _task_order(plan: Plan) -> list[TaskPlacement]:
    """Tasks in dependency order (Kahn; lowest index first among ready ones)."""
    pending = {t.task: t for t in plan.tasks}
    done: set[str] = set()
    order: list[TaskPlacement] = []
    while pending:
        ready = sorted(
            (t for t in pending.values() if set(t.depends_on) <= done), key=lambda t: t.index
        )
        if not ready:
            raise PlanError("the plan's task dependencies form a cycle")
        order.append(ready[0])
        done.add(ready[0].task)
        del pending[ready[0].task]
    return order


class Applier:
    def __init__(
        self,
        plan: Plan,
        plan_path: Path,
        plan_digest: str,
        *,
        db: StateDB,
        config: Config,
        catalog,
        progress: ApplyProgress,
        options: ApplyOptions,
    ):
        self.plan, self.plan_path, self.plan_digest = plan, Path(plan_path), plan_digest
        self.db, self.config, self.catalog = db, config, catalog
        self.progress, self.options = progress, options
        self.outcomes: list[ClusterOutcome] = []
        self.owner: str | None = None  # the task file, resolved: what state records as owner
        self._sessions: list[tuple[ClusterSession, JobRecord]] = []

    # -- entry --------------------------------------------------------------------------------

    def run(self) -> list[ClusterOutcome]:
        plan = self.plan
        multi = refuse_unrunnable(plan, detach=self.options.detach)
        task_file = task_must_exist(plan, self.plan_path)
        # where the job's relative workdir, mounts and uploads start (the base recorded)
        paths = check_paths_start(plan, self.plan_path)
        names = sorted({c.cluster for c in plan.changes})
        with ExitStack() as locks:
            for name in names:
                locks.enter_context(
                    cluster_lock(
                        name,
                        wait=self.options.lock_wait,
                        purpose=self.options.command or f"skyform apply {self.plan_path}",
                    )
                )
            for name in names:  # a start no command recorded: its nodes say (settle.py)
                self._settle(name)
            task_data = check_fresh(plan, self.plan_path, db=self.db, catalog=self.catalog)
            self.owner = str(task_file.resolve())
            refuse_takeover(
                plan, self.db, Owner(self.owner, plan.task.path), take_over=self.options.take_over
            )
            secrets = (
                {}
                if plan.destroy
                else resolve_secrets(
                    plan,
                    task_file,
                    task_data,
                    secret_overrides=self.options.secret_overrides,
                    environ=self.options.environ,
                )
            )
            if not plan.destroy:  # before anything is reserved or made (plan asked too)
                from skyform.ops.plan import check_ssh_destinations

                check_ssh_destinations(plan, self.config, self.db.taken_nodes(), paths)
            for change in plan.changes:
                if change.action is Action.DELETE:
                    self._destroy(change, "destroyed by plan")
            if plan.buckets and not plan.destroy:
                from skyform.storage.provision import ensure_buckets

                ensure_buckets(
                    plan,
                    paths,
                    self.db,
                    self.config.storage,
                    lambda message: self.progress.stage("buckets", "buckets", message),
                    config=self.config,
                    plan_digest=self.plan_digest,
                )
            follow_later = not multi
            for task in _task_order(plan):
                planned = plan.change_for(task.cluster)
                if planned is None or planned.action is Action.DELETE:
                    continue
                outcome = self._apply_task(
                    planned,
                    task,
                    paths,
                    secrets.get(task.task, {}),
                    follow_now=not follow_later,
                )
                self.outcomes.append(outcome)
                if multi and outcome.failed:
                    self.progress.stage(
                        task.cluster, "stop", "a task failed: its dependents are not started"
                    )
                    break
        if follow_later and not self.options.detach:
            self._follow_pending()
        else:
            self._close_sessions()
        return self.outcomes

    # -- one cluster --------------------------------------------------------------------------

    def _settle(self, name: str) -> None:
        """Jobs a command left unstarted on this cluster, recorded as their nodes have them
        (a job that ran then changes the cluster: a plan made before is stale)."""
        record = self.db.get_cluster(name)
        if record is None:
            return
        with nodes_on_demand(record.handle) as nodes:
            settle_unstarted(self.db, name, managed_job_id=None, nodes=nodes)

    def _emit(self, cluster: str, stage: str):
        return lambda message: self.progress.event(cluster, stage, None, message)

    def _destroy(self, change: ClusterChange, reason: str) -> None:
        record = self.db.get_cluster(change.cluster)
        if record is None:
            return
        self.progress.stage(change.cluster, "destroy", change.reason)
        clusters.destroy(
            self.db, self.config, record, reason=reason, emit=self._emit(change.cluster, "destroy")
        )
        if change.action is Action.DELETE:
            self.outcomes.append(ClusterOutcome(change.cluster, change.action, message="destroyed"))

    def _apply_task(
        self,
        change: ClusterChange,
        task: TaskPlacement,
        task_dir: Path,
        secrets: dict[str, str],
        *,
        follow_now: bool,
    ) -> ClusterOutcome:
        name, action = change.cluster, change.action
        if action is Action.NOOP:
            if self.options.rerun_unchanged:
                return self._rerun(name, task, task_dir, secrets, follow_now=follow_now)
            self.progress.stage(name, "noop", "up to date: nothing to do")
            return ClusterOutcome(name, action, message="unchanged")
        assert change.after is not None
        record = self.db.get_cluster(name)
        if action is Action.REPLACE and record is not None:
            self._destroy(change, f"replaced: {change.reason}")
            record = None
        where = (
            f"{change.after.offer.infra} "
            f"{change.after.num_nodes}x {change.after.offer.instance_type}"
        )
        if record is None or record.status is ClusterStatus.INIT:  # INIT: an apply was cut short
            self.progress.stage(name, "provision" if record is None else "resume", where)
            with _provisioning(name):
                record = converge_cluster(
                    self.db,
                    self.config,
                    change.after,
                    record,
                    source=self.owner,
                    plan_digest=self.plan_digest,
                    emit=self._emit(name, "provision"),
                )
        else:
            if record.status is ClusterStatus.STOPPED:  # as `sky launch` on a stopped cluster
                record = self._start(record)
            setup_done = record.setup_done == change.after.setup_digest
            record = self._update_in_place(change, record)
            rerun = self.options.rerun_unchanged
            if not job_runs_again(change) and setup_done and not rerun:
                attached = self._attach_again(record, change, task)
                return ClusterOutcome(name, action, message="updated in place" + attached)
        return self._run_job(record, task, task_dir, secrets, follow_now=follow_now)

    def _rerun(
        self,
        name: str,
        task: TaskPlacement,
        task_dir: Path,
        secrets: dict[str, str],
        *,
        follow_now: bool,
    ) -> ClusterOutcome:
        """The cluster is as planned: sync the workdir and run the job again on it (setup
        only if its marker says it has not finished there); nothing is provisioned."""
        record = self.db.require_cluster(name)
        if record.status is ClusterStatus.STOPPED:
            record = self._start(record)
        self.progress.stage(name, "rerun", f"`{task.task}` (the cluster is up to date)")
        return self._run_job(record, task, task_dir, secrets, follow_now=follow_now, quiet=True)

    def _start(self, record: ClusterRecord) -> ClusterRecord:
        from skyform.lifecycle.autostop import push_setting
        from skyform.ops.stopstart import resume_stopped

        self.progress.stage(record.name, "start", "the cluster is stopped: starting it")
        return resume_stopped(
            self.db, self.config, record, emit=self._emit(record.name, "start"), push=push_setting
        )

    def _update_in_place(self, change: ClusterChange, record: ClusterRecord) -> ClusterRecord:
        assert change.after is not None
        return update_in_place(
            self.db,
            self.config,
            record,
            change.after,
            in_place_updates(change),
            source=self.owner,
            plan_digest=self.plan_digest,
            stage=functools.partial(self.progress.stage, change.cluster),
            emit=self._emit(change.cluster, "update"),
        )

    def _attach_again(
        self, record: ClusterRecord, change: ClusterChange, task: TaskPlacement
    ) -> str:
        """The bucket mounts the plan attaches again (a COPY refresh, a missing mount); the
        job does not run. Returns what to add to the outcome's message."""
        if not change.attach_again:
            return ""
        name = record.name
        self.progress.stage(name, "attach", ", ".join(change.attach_again))
        attached = attach_again(
            self.config,
            record,
            task.job,
            change.attach_again,
            on_event=lambda stage, rank, msg: self.progress.event(name, stage, rank, msg),
        )
        return f"; bucket mounts attached again: {', '.join(attached)}" if attached else ""

    def _run_job(
        self,
        record: ClusterRecord,
        task: TaskPlacement,
        task_dir: Path,
        secrets: dict[str, str],
        *,
        follow_now: bool,
        quiet: bool = False,
    ) -> ClusterOutcome:
        from skyform.exec.manifest import workdir_files

        name = record.name
        if not quiet:
            self.progress.stage(name, "run", f"sync, setup and run `{task.task}`")
        # what the next plan compares against: the job's text and the workdir as synced now
        workdir = synced_workdir(task.job, task_dir, secrets)
        record = record.model_copy(
            update={
                "job": task.job,
                "workdir_files": workdir_files(workdir) if workdir is not None else None,
            }
        )
        session, run = run_job(
            self.db,
            record,
            task.job,
            task_dir=task_dir,
            secrets=secrets,
            on_event=lambda stage, rank, msg: self.progress.event(name, stage, rank, msg),
            on_log=functools.partial(self.progress.log, name),
        )
        return self._after_submit(session, run, follow_now)

    def _after_submit(
        self, session: ClusterSession, run: JobRun, follow_now: bool
    ) -> ClusterOutcome:
        job = run.job
        action = self.plan.change_for(job.cluster).action  # type: ignore[union-attr]
        if job.status.is_terminal or self.options.detach:
            session.close()
            return ClusterOutcome(
                job.cluster,
                action,
                job,
                "submitted" if not job.status.is_terminal else job.status.value,
            )
        if follow_now:
            job = self._follow(session, job)
            return ClusterOutcome(job.cluster, action, job, job.status.value)
        self._sessions.append((session, job))
        return ClusterOutcome(job.cluster, action, job, "submitted")

    def _follow(
        self, session: ClusterSession, job: JobRecord, *, others: Sequence[JobRecord] = ()
    ) -> JobRecord:
        """Follow `job` to its end (Ctrl-C detaches from it and `others`), then close."""
        try:
            with detaching(job, others=others):
                on_log = functools.partial(self.progress.log, job.cluster)
                return follow_job(self.db, session, job, on_log=on_log)
        finally:
            session.close()

    def _follow_pending(self) -> None:
        by_cluster = {o.cluster: i for i, o in enumerate(self.outcomes)}
        for session, job in self._sessions:
            final = self._follow(
                session, job, others=[j for _, j in self._sessions if j is not job]
            )
            i = by_cluster[job.cluster]
            self.outcomes[i] = ClusterOutcome(
                job.cluster, self.outcomes[i].action, final, final.status.value
            )
        self._sessions.clear()

    def _close_sessions(self) -> None:
        for session, _ in self._sessions:
            session.close()
        self._sessions.clear()
