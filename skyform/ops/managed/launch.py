"""`skyform jobs launch`: record a managed job, save its first plan revision, start its
controller — or change nothing when the task or the plan is wrong.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from skyform.controllers.loop import registered
from skyform.errors import SkyformError
from skyform.ops.managed import jobdir, sealed
from skyform.ops.managed.revisions import cluster_name, make_revision
from skyform.spec.inputs import TaskInputs
from skyform.spec.recovery import FLAG_NAMES, Strategy
from skyform.state.db import StateDB
from skyform.state.managed import ManagedJobRecord, ManagedJobs, ManagedTask
from skyform.state.revisions import Revisions, job_owner

MAX_CONTROLLER_STARTS = 10


def _recovery_settings(dag, strategy: str | None, max_restarts: int | None) -> dict:
    """CLI flags win over the task's `job_recovery`, which wins over the defaults."""
    declared = [
        r.job_recovery
        for t in dag.tasks
        for r in t.resources.alternatives()
        if r.job_recovery is not None
    ]
    first = declared[0] if declared else None
    chosen = strategy or (first.strategy if first else None)
    try:
        parsed = Strategy.parse(chosen)
    except ValueError as exc:
        raise SkyformError(str(exc), f"Use {' or '.join(FLAG_NAMES)}.") from None
    return {
        "strategy": parsed.value,
        "max_restarts_on_errors": max_restarts
        if max_restarts is not None
        else (first.max_restarts_on_errors if first else 0),
        "recover_on_exit_codes": tuple(first.recover_on_exit_codes) if first else (),
    }


def launch_plan(
    db: StateDB,
    plan_path: Path,
    *,
    secret_overrides: list[str],
    strategy: str | None,
    max_restarts: int | None,
    name: str | None = None,
) -> ManagedJobRecord:
    """Launch from a reviewed plan: it must be fresh, and the managed job's first revision
    must place every task exactly as the reviewed plan does (only cluster names differ)."""
    from skyform.config import load_config
    from skyform.errors import StalePlanError
    from skyform.lifecycle.freshness import check_fresh, check_paths_start, task_file_of
    from skyform.plan.catalog import load_catalog
    from skyform.plan.planfile import read_plan
    from skyform.spec.overrides import ResourceOverrides

    reviewed, _ = read_plan(plan_path)
    if reviewed.destroy:
        raise SkyformError(f"{plan_path} is a destroy plan; apply it with skyform apply")
    check_fresh(reviewed, plan_path, db=db, catalog=load_catalog(load_config()))
    envs = sorted({f"{k}={v}" for t in reviewed.tasks for k, v in t.job.envs.items()})
    task_file = task_file_of(reviewed, plan_path)
    flags = ResourceOverrides.from_recorded(reviewed.task.overrides, task_file.resolve().parent)
    record = launch(
        db,
        task_file,
        inputs=TaskInputs(
            envs=tuple(envs),
            secrets=tuple(secret_overrides),
            resources=flags,
            base_dir=str(check_paths_start(reviewed, plan_path))
            if reviewed.task.relative_to is not None
            else None,
        ),
        strategy=strategy,
        max_restarts=max_restarts,
        objective=reviewed.objective,
        start=False,
        name=name,
    )
    first = Revisions(db).list(job_owner(record.id))[0]
    planned, _ = sealed.revision_plan(db, first)
    want = {t.index: t.offer for t in reviewed.tasks}
    got = {t.index: t.offer for t in planned.tasks}
    if want != got:
        _forget(db, record.id)
        raise StalePlanError(
            f"{plan_path} no longer matches what planning gives now",
            "Make a new plan and review it.",
        )
    if needs_local_controller(db, record):
        start_controllers(db, [record.id])
    return record


def local_paths(dag, task_file: Path) -> tuple[str, ...]:
    """The job's workdir and local file-mount sources, absolute, as this machine resolves
    them (relative paths start at the task file's folder; buckets and git are not local)."""
    from skyform.spec.localpaths import local_path

    task_dir = Path(task_file).resolve().parent
    found: list[str] = []
    for task in dag.tasks:
        if isinstance(task.workdir, str):
            found.append(str(local_path(task.workdir, task_dir)))
        for mount in task.file_mounts.values():
            sources = [mount.source] if isinstance(mount.source, str) else mount.source or ()
            found += [str(local_path(s.strip(), task_dir)) for s in sources if "://" not in s]
    return tuple(dict.fromkeys(found))


def missing_here(record: ManagedJobRecord) -> list[str]:
    """The job's local paths this machine does not have (a controller here cannot sync them)."""
    return [p for p in record.local_paths if not Path(p).exists()]


def needs_local_controller(db: StateDB, record: ManagedJobRecord) -> bool:
    """Start the job's controller on this machine: no controller service is registered, or
    the job syncs files that only this machine has (a service elsewhere cannot)."""
    return not registered(db) or bool(record.local_paths)


def launch(
    db: StateDB,
    task_file: Path,
    *,
    inputs: TaskInputs,
    strategy: str | None,
    max_restarts: int | None,
    objective: str = "cost",
    start: bool = True,
    name: str | None = None,
) -> ManagedJobRecord:
    """Record the job (named `name`, else after the task), plan its first revision, start
    its controller. `inputs` are pinned (every value resolved now): the controller that
    re-plans the job later has no shell environment."""
    from skyform.config import load_config
    from skyform.spec import check_supported, load_task_text
    from skyform.spec.loader import decode_task, read_task_bytes

    data = read_task_bytes(task_file)  # read once: what is parsed is what the job keeps
    pinned = inputs.pinned()  # env files folded in, `--env K` read from the shell now
    dag = load_task_text(
        decode_task(data, str(task_file)), path_label=str(task_file), inputs=pinned
    )
    check_supported(dag)
    settings = _recovery_settings(dag, strategy, max_restarts)
    recovery = load_config().recovery
    jobs = ManagedJobs(db)
    name = name or dag.name or dag.tasks[0].name or Path(task_file).stem
    record = jobs.create(
        ManagedJobRecord(
            id=0,
            name=name,
            task_file=str(Path(task_file).resolve()),
            local_paths=local_paths(dag, task_file),
            objective=objective,
            check_interval=recovery.check_interval,
            lost_after=recovery.lost_after,
            give_up_after=recovery.give_up_after,
            max_rounds=recovery.max_rounds,
            tasks=[],
            submitted_at=time.time(),
            **settings,
        )
    )
    try:
        tasks = [
            ManagedTask(index=i, name=t.label(i), cluster=cluster_name(record.id, t.label(i)))
            for i, t in enumerate(dag.tasks)
        ]
        record = record.model_copy(update={"tasks": tasks})
        jobs.put(record)
        jobdir.save_task(record.id, data)
        jobdir.save_inputs(
            record.id,
            envs=list(pinned.envs),
            secrets=list(pinned.secrets),
            overrides=dict(dag.overrides),
            base_dir=pinned.base_dir,
        )
        sealed.share(db, record.id)  # a controller on another machine runs it from the store
        every = list(range(len(tasks)))
        rev = make_revision(db, record, tasks=every, kind="launch", reason="launch")
        record = record.model_copy(update={"revision": rev.revision.revision})
        jobs.put(record)
        if rev.plan.buckets:
            # made and uploaded here, from the user's machine, as apply does before any
            # cluster: the controller may run elsewhere, without the local sources
            from skyform.storage.provision import ensure_buckets

            config = load_config()
            ensure_buckets(
                rev.plan,
                jobdir.paths_start(record),
                db,
                config.storage,
                config=config,
                plan_digest=rev.revision.digest,
            )
    except BaseException:
        _forget(db, record.id)
        raise
    db.add_event(
        "managed.pending",
        f"managed job {record.id} submitted",
        data={"managed_job_id": record.id, "to": "PENDING"},
    )
    if start and needs_local_controller(db, record):
        start_controllers(db, [record.id])
    return record


def _forget(db: StateDB, job_id: int) -> None:
    """Undo a launch that failed before its controller started: nothing is left behind."""
    ManagedJobs(db).delete(job_id)
    shutil.rmtree(jobdir.job_dir(job_id), ignore_errors=True)


# how long a start waits for a controller to take its job's lease (it imports skyform first)
DRIVEN_WITHIN = 20.0


def start_controllers(db: StateDB, job_ids: list[int]) -> None:
    """Start the jobs' controllers and return once each drives its job (holds the job's
    lease) or has exited: what `jobs queue` shows next names them (CONTROLLER), never `-`
    for a controller still starting."""
    from skyform.controllers.lease import job_lease

    starting = {job_id: spawn_controller(job_id) for job_id in job_ids}
    deadline = time.monotonic() + DRIVEN_WITHIN
    while starting and time.monotonic() < deadline:
        for job_id, proc in list(starting.items()):
            if proc.poll() is not None or db.get_lease(job_lease(job_id)) is not None:
                del starting[job_id]
        time.sleep(0.05 if starting else 0)


def spawn_controller(job_id: int) -> subprocess.Popen:
    """Start the controller detached: its own session, no inherited descriptors, output to
    the job's controller.log. It outlives the CLI."""
    log = open(jobdir.controller_log(job_id), "ab")  # noqa: SIM115 - handed to the child
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skyform.ops.managed.controller", str(job_id)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=dict(os.environ),
        )
    finally:
        log.close()
    return proc


def controller_alive(job_id: int) -> bool:
    """A live controller holds its flock; if we can take it, nobody runs the job."""
    from skyform.state.lock import flock_held

    return flock_held(jobdir.controller_lock(job_id))


def ensure_controllers(db: StateDB) -> list[int]:
    """Start again the controller of every unfinished managed job whose controller died
    (e.g. `kill -9`, a reboot). Returns the job ids restarted."""
    restarted: list[int] = []
    services = bool(registered(db))  # they adopt jobs: nothing is spawned here
    jobs = ManagedJobs(db)
    for record in jobs.list():
        if record.status.is_terminal or controller_alive(record.id):
            continue
        if services and (not record.local_paths or missing_here(record)):
            continue  # the controller services adopt it (or it syncs another machine's files)
        if db.shares_keys and not jobdir.has_task(record.id):
            continue  # launched from another SKYFORM_HOME: its controller lives there
        if time.time() - record.submitted_at < 2 and record.controller_starts == 0:
            continue  # just launched: its controller may still be starting
        if record.controller_starts >= MAX_CONTROLLER_STARTS:
            from skyform.state.managed import ManagedJobStatus

            jobs.transition(
                record,
                ManagedJobStatus.FAILED_CONTROLLER,
                f"the controller died {record.controller_starts} times",
            )
            continue
        db.add_event(
            "managed.controller_restarted",
            f"controller of job {record.id} restarted",
            data={"managed_job_id": record.id},
        )
        restarted.append(record.id)
    start_controllers(db, restarted)
    return restarted
