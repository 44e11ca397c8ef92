"""`exec`: run a task's `run` or an ad-hoc command on a cluster that already exists.

Like `sky exec`: the workdir is synced again, setup is not run, and the job gets the next job
id on the cluster. The exit code is the command's.
"""

from __future__ import annotations

import os
from pathlib import Path

from skyform.apply.interrupts import detaching
from skyform.apply.jobrun import follow_job, start_job
from skyform.errors import SkyformError
from skyform.plan.model import JobSpec
from skyform.plan.planner import job_spec, sha256
from skyform.state.db import open_state
from skyform.state.lock import cluster_lock
from skyform.state.models import JobRecord, JobStatus


def _is_task_file(target: str) -> bool:
    return target.endswith((".yaml", ".yml")) and Path(target).is_file()


def _command_spec(command: str, load_kwargs: dict) -> JobSpec:
    """A JobSpec for an ad-hoc command; --env-file then --env give its envs (as for tasks)."""
    from skyform.spec.envs import parse_overrides, read_env_file

    envs: dict[str, str] = {}
    for env_file in load_kwargs.get("env_files", ()):
        envs.update(read_env_file(env_file))
    envs.update(
        parse_overrides(load_kwargs.get("env_overrides", ()), flag="--env", environ=os.environ)
    )
    digest = sha256(command + repr(sorted(envs.items())))
    return JobSpec(name="exec", run=command, envs=envs, setup_digest=sha256(""), job_digest=digest)


def exec_on_cluster(
    cluster: str, target: str, *, detach: bool, load_kwargs: dict, on_log, on_event
) -> JobRecord:
    secrets: dict[str, str] = {}
    task_dir = Path.cwd()
    if _is_task_file(target):
        from skyform.spec import load_task

        dag = load_task(Path(target), **load_kwargs)
        if len(dag.tasks) != 1:
            raise SkyformError(
                f"{target} is a pipeline of {len(dag.tasks)} tasks; exec runs one",
                "Apply the pipeline, or exec one task's file.",
            )
        task = dag.tasks[0]
        spec = job_spec(task, task.label(0))
        secrets = task.secret_values()
        task_dir = Path(target).resolve().parent
    else:
        spec = _command_spec(target, load_kwargs)
    db = open_state()
    try:
        record = db.require_cluster(cluster)
        if record.handle is None:
            raise SkyformError(
                f"cluster {cluster!r} has no nodes (status {record.status.value})",
                "Apply its plan first.",
            )
        if spec.num_nodes > len(record.handle.nodes):
            raise SkyformError(
                f"the task wants {spec.num_nodes} nodes; cluster {cluster!r} has "
                f"{len(record.handle.nodes)}",
                "Plan and apply it as its own cluster instead.",
            )
        with cluster_lock(cluster, purpose=f"skyform exec {cluster}"):
            session, run = start_job(
                db,
                record,
                spec,
                task_dir=task_dir,
                secrets=secrets,
                run_setup=False,
                on_event=on_event,
            )
        try:
            if detach or run.job.status.is_terminal:
                return run.job
            with detaching(run.job):
                return follow_job(db, session, run.job, on_log=on_log)
        finally:
            session.close()
    finally:
        db.close()


def exit_code_of(job: JobRecord) -> int:
    if job.status is JobStatus.SUCCEEDED:
        return 0
    codes = [c for _, c in sorted(job.exit_codes.items()) if c not in (0, None)]
    return codes[0] if codes else 1
