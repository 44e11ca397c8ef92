"""Reading a saved plan's task file again at apply: for its secret values, and to check that
what the plan runs is what the task file says.

By the time this runs the task file's bytes are the ones the plan was made from (freshness),
so a job the plan describes differently from the file (an edited `run`, `setup`, `workdir`,
file mount or node count, even with every digest recomputed) was edited in the plan: it is
refused as corrupt, and so is a task digest that is not the file's. Envs are checked as far
as they can be: `--env` at plan time may add or change a pair on every task, so a pair all
tasks share passes (a one-task plan's envs always do); `show` prints them in full.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skyform.errors import PlanCorruptError, SpecError
from skyform.lifecycle.freshness import task_file_of
from skyform.plan.model import JobSpec, Plan, TaskPlacement
from skyform.plan.planfile import plan_digest
from skyform.spec import Dag, task_digest

COMPARED = (
    "run",
    "setup",
    "envs",
    "workdir",
    "file_mounts",
    "checkpoint_dir",
    "num_nodes",
    "secrets",
)


def load_as_planned(
    plan: Plan,
    task_file: Path,
    envs: Mapping[str, str],
    *,
    secret_overrides: list[str],
    environ: Mapping[str, str],
    secret_names: set[str],
) -> Dag:
    """The task file loaded with `envs` given as `--env` (so nulls resolve as they did at plan
    time), the plan's resource flags, and secrets from `--secret` or the environment."""
    from skyform.spec import load_task
    from skyform.spec.inputs import TaskInputs
    from skyform.spec.overrides import ResourceOverrides

    given = {o.split("=", 1)[0] for o in secret_overrides}
    implicit = [name for name in sorted(secret_names - given) if name in environ]
    flags = (
        ResourceOverrides.from_recorded(plan.task.overrides, task_file.resolve().parent)
        if plan.task.overrides
        else None
    )
    inputs = TaskInputs(
        envs=tuple(f"{k}={v}" for k, v in sorted(envs.items())),
        secrets=(*secret_overrides, *implicit),
        resources=flags,
        environ=environ,
    )
    return load_task(task_file, inputs)


def _differs(planned: JobSpec, made: JobSpec) -> str | None:
    for name in COMPARED:
        if getattr(planned, name) != getattr(made, name):
            return name
    return None


def flag_envs(plan: Plan) -> dict[str, str]:
    """The envs `--env` / `--env-file` could have given at plan time. Flags apply to every task
    of a pipeline, so they are the pairs all tasks share; a pair that differs between tasks
    came from the file, which gives it again."""
    if not plan.tasks:
        return {}
    first, *rest = (t.job.envs for t in plan.tasks)
    return {k: v for k, v in first.items() if all(envs.get(k) == v for envs in rest)}


def check_jobs_match_task(
    plan: Plan, plan_path: Path, *, secret_overrides: list[str], environ: Mapping[str, str]
) -> None:
    """Refuse a plan whose jobs or task digest are not the ones its task file makes. Only
    when the file is the one the plan was made from: a task file gone or changed is a stale
    plan (apply's freshness check says so, exit 3). The secrets' values are needed (the
    planner wrote `${NAME}` where a value appeared in a path); a plan whose values are not
    all given is not checked here: nothing runs, apply refuses it for the missing value."""
    task_file = task_file_of(plan, plan_path)
    try:
        unchanged = plan_digest(task_file.read_bytes()) == plan.task.file_digest
    except OSError:
        unchanged = False
    if plan.destroy or not unchanged:
        return
    try:
        dag = load_as_planned(
            plan,
            task_file,
            flag_envs(plan),
            secret_overrides=secret_overrides,
            environ=environ,
            secret_names={name for t in plan.tasks for name in t.job.secrets},
        )
    except SpecError as err:
        if "no value" in err.message:
            return
        raise
    if "sha256:" + task_digest(dag) != plan.task.digest:
        _refuse("task.digest", task_file)
    for i, placement in enumerate(plan.tasks):
        field = _mismatch(placement, dag)
        if field is not None:
            _refuse(f"tasks.{i}.job.{field}", task_file)


def _refuse(where: str, task_file: Path) -> None:
    raise PlanCorruptError(
        f"plan is corrupt or was edited: {where}: not what the task file {task_file} says "
        "(the file is unchanged since the plan was made)",
        "Make a new plan from the task file: skyform plan TASK.yaml -o PLAN.json",
    )


def _mismatch(placement: TaskPlacement, dag: Dag) -> str | None:
    if placement.index >= len(dag.tasks):
        return "name"
    task = dag.tasks[placement.index]
    label = task.label(placement.index)
    if label != placement.task:
        return "name"
    from skyform.plan.planner import job_spec

    return _differs(placement.job, job_spec(task, label, placement.offer))  # buckets: its cloud
