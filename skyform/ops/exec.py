"""`exec`: run a task's `run` or an ad-hoc command on a cluster that already exists.

Like `sky exec`: the workdir is synced again, setup is not run (unless the cluster's container
had to be made anew: then the cluster's setup runs in it first), and the job gets the next job
id on the cluster. The exit code is the command's. Resource flags are the job's demand, as in
`sky exec`: `--gpus`, `--infra`, `--use-spot`, `-t`, `--image-id` must match the cluster (or
exec refuses, changing nothing); `--cpus`, `--memory`, `--disk-size`, `--ports` shape a
cluster, not a job, and are ignored with a note; `--workdir` and `--num-nodes` apply.
"""

from __future__ import annotations

import os
from pathlib import Path

from skyform.digests import sha256
from skyform.errors import SkyformError
from skyform.lifecycle.cluster_job import follow_job
from skyform.lifecycle.converge import require_up, run_job
from skyform.lifecycle.interrupts import detaching
from skyform.plan.model import JobSpec
from skyform.plan.specs import job_spec
from skyform.spec.inputs import TaskInputs
from skyform.spec.overrides import ResourceOverrides, flag_name
from skyform.state.db import open_state
from skyform.state.lock import cluster_lock
from skyform.state.models import ClusterRecord, JobRecord, JobStatus

IGNORED_BY_EXEC = ("cpus", "memory", "disk_size", "ports")


def _is_task_file(words: list[str]) -> bool:
    """One word naming a .yaml/.yml that is there: read as a task file (a link loop or a
    FIFO of that name gets the task reader's error, not a run as a command)."""
    return len(words) == 1 and words[0].endswith((".yaml", ".yml")) and os.path.lexists(words[0])


def command_text(words: list[str]) -> str:
    """`exec C python train.py --lr 1` runs `python train.py --lr 1`: the words joined with
    spaces for the node's shell, as `ssh host CMD ARGS...` and `sky exec` do."""
    return " ".join(words)


def ignored_flags(overrides: ResourceOverrides | None) -> list[str]:
    given = overrides.given if overrides else {}
    return [
        f"--{flag_name(k)} is ignored by exec: it shapes a cluster, and this one exists "
        "(change it with `skyform launch`)"
        for k in IGNORED_BY_EXEC
        if k in given
    ]


def _demand_problems(record: ClusterRecord, over: ResourceOverrides) -> list[str]:
    """What the flags ask that the cluster does not have (SkyPilot's "must fit")."""
    from skyform.spec.accelerators import parse_accelerators
    from skyform.spec.infra import legacy_infra, parse_infra
    from skyform.spec.overrides import RESET

    offer = record.spec.offer
    given = {k: v for k, v in over.given.items() if str(v).lower() not in RESET}
    problems = []
    if "gpus" in given:
        items = parse_accelerators(given["gpus"], ("--gpus",)).items
        have = (offer.accelerator or "").lower()
        if not any(a.name.lower() == have and a.count <= offer.accelerator_count for a in items):
            problems.append(f"--gpus {given['gpus']}: the cluster has {fmt_accels(offer)}")
    if "infra" in given or any(k in given for k in ("cloud", "region", "zone")):
        want = (
            parse_infra(given["infra"])
            if "infra" in given
            else legacy_infra(given.get("cloud"), given.get("region"), given.get("zone"))
        )
        for part in ("cloud", "region", "zone", "context"):
            wanted = getattr(want, part)
            if wanted is not None and wanted != getattr(offer, part):
                problems.append(f"{part} {wanted}: the cluster is on {offer.infra}")
    if "use_spot" in given and given["use_spot"] != offer.spot:
        problems.append(f"{'spot' if given['use_spot'] else 'on-demand'}: the cluster is not")
    if "instance_type" in given and given["instance_type"] != offer.instance_type:
        problems.append(f"-t {given['instance_type']}: the cluster is {offer.instance_type}")
    if "image_id" in given and given["image_id"] != record.spec.image_id:
        problems.append(f"--image-id {given['image_id']}: the cluster runs {record.spec.image_id}")
    return problems


def fmt_accels(offer) -> str:
    if not offer.accelerator:
        return "no accelerators"
    return f"{offer.accelerator}:{offer.accelerator_count:g}"


def check_demand(record: ClusterRecord, over: ResourceOverrides | None) -> None:
    problems = _demand_problems(record, over) if over else []
    if problems:
        raise SkyformError(
            f"cluster {record.shown_name!r} does not have what the flags ask: "
            + "; ".join(problems),
            "exec runs on the cluster as it is. To run with other resources, launch a "
            "cluster with them: skyform launch TASK.yaml -c NEW_NAME with the same flags.",
        )


def _command_spec(command: str, inputs: TaskInputs, workdir: str | None) -> JobSpec:
    """A JobSpec for an ad-hoc command; --env-file then --env give its envs (as for tasks).
    A command has no secrets: `--secret` is not read for it."""
    from dataclasses import replace

    from skyform.spec.inputs import resolve_inputs

    envs = dict(resolve_inputs(replace(inputs, secrets=())).envs)
    digest = sha256(command + repr(sorted(envs.items())) + repr(workdir))
    return JobSpec(
        name="exec",
        run=command,
        envs=envs,
        workdir=workdir,
        setup_digest=sha256(""),
        job_digest=digest,
    )


def exec_on_cluster(
    cluster: str,
    target: list[str],
    *,
    detach: bool,
    inputs: TaskInputs,
    on_log,
    on_event,
) -> JobRecord:
    """Run a task file's job or a command on an existing cluster; `inputs.resources` are
    the job's demand, checked against the cluster."""
    overrides = inputs.resources
    secrets: dict[str, str] = {}
    task_dir = Path.cwd()
    task = None
    if len(target) == 1:
        from skyform.spec.loader import refuse_stdin

        refuse_stdin(target[0])  # `exec C -`: a task on stdin, refused as every verb does
    if _is_task_file(target):
        from skyform.spec import load_task

        path = Path(target[0])
        dag = load_task(path, inputs)
        if len(dag.tasks) != 1:
            raise SkyformError(
                f"{path} is a pipeline of {len(dag.tasks)} tasks; exec runs one",
                "Apply the pipeline, or exec one task's file.",
            )
        task = dag.tasks[0]
        spec = job_spec(task, task.label(0))
        secrets = task.secret_values()
        task_dir = path.resolve().parent
    else:
        workdir = overrides.workdir if overrides else None
        spec = _command_spec(command_text(target), inputs, workdir)
        if overrides and overrides.num_nodes is not None:
            spec = spec.model_copy(update={"num_nodes": overrides.num_nodes})
    with open_state() as db:
        record = db.require_cluster(cluster)
        if task is not None and any(m.bucket for m in task.file_mounts.values()):
            spec = job_spec(task, task.label(0), record.spec.offer)  # buckets: the cluster's cloud
        check_demand(record, overrides)
        require_up(record, spec.num_nodes)
        with cluster_lock(cluster, purpose=f"skyform exec {cluster}"):
            session, run = run_job(
                db,
                record,
                spec,
                task_dir=task_dir,
                secrets=secrets,
                setup=False,
                on_event=on_event,
                on_log=on_log,  # the cluster's setup, when a container made anew runs it
            )
        try:
            if detach or run.job.status.is_terminal:
                return run.job
            with detaching(run.job):
                return follow_job(db, session, run.job, on_log=on_log)
        finally:
            session.close()


def exit_code_of(job: JobRecord) -> int:
    if job.status is JobStatus.SUCCEEDED:
        return 0
    codes = [c for _, c in sorted(job.exit_codes.items()) if c not in (0, None)]
    return codes[0] if codes else 1
