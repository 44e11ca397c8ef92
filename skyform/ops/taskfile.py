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
from skyform.lifecycle.freshness import check_paths_start, read_task_file, task_file_of
from skyform.plan.model import JobSpec, Plan, TaskPlacement
from skyform.plan.planfile import plan_digest
from skyform.spec import Dag, task_digest
from skyform.spec.portable import portable_dag

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
    data: bytes,
    envs: Mapping[str, str],
    *,
    secret_overrides: list[str],
    environ: Mapping[str, str],
    secrets_by_name: bool = False,
    base: Path | None = None,
) -> Dag:
    """The task file's bytes `data` loaded with `envs` given as `--env` (so nulls resolve as
    they did at plan time), the plan's resource flags, and every secret the file declares
    from `--secret` or the environment (a value missing is an error naming how to give it,
    unless `secrets_by_name`: then, as at plan time, only a secret a path uses needs one).
    Relative paths start where the plan's did (`base`, else the plan's own: Plan.base_dir)."""
    from skyform.spec import load_task_text
    from skyform.spec.inputs import TaskInputs
    from skyform.spec.loader import decode_task
    from skyform.spec.overrides import ResourceOverrides

    flags = (
        ResourceOverrides.from_recorded(plan.task.overrides, task_file.resolve().parent)
        if plan.task.overrides
        else None
    )
    inputs = TaskInputs(
        envs=tuple(f"{k}={v}" for k, v in sorted(envs.items())),
        secrets=tuple(secret_overrides),
        resources=flags,
        environ=environ,
        secrets_by_name=secrets_by_name,
        secret_environ=environ,
        base_dir=str(base) if base is not None else plan.base_dir(),
    )
    try:
        return load_task_text(
            decode_task(data, str(task_file)), path_label=str(task_file), inputs=inputs
        )
    except SpecError as err:
        if _no_secret_value(err):
            name = (err.field or "").removeprefix("secrets.")
            err.hint = (
                f"Pass it to apply as --secret {name}=VALUE, or export {name} in the "
                "environment: the plan holds only its name."
            )
        raise


def _no_secret_value(err: SpecError) -> bool:
    return (err.field or "").startswith("secrets.") and "has no value" in err.message


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
    """Refuse a plan whose jobs or task digest are not the ones its task file makes — every
    plan, whatever it declares. Only when the file is the one the plan was made from: a task
    file gone or changed is a stale plan (apply's freshness check says so, exit 3).

    First by secret names, as the plan was made: an edit is refused as one whether or not
    the values are given. Then with every value the file declares: apply needs them all
    (and a path may hold one), so a missing one is refused here, before anything exists."""
    data = read_task_file(plan, plan_path)
    if plan.destroy or data is None or plan_digest(data) != plan.task.file_digest:
        return
    task_file = task_file_of(plan, plan_path)
    base = check_paths_start(plan, plan_path)
    for by_name in (True, False):
        try:
            dag = load_as_planned(
                plan,
                task_file,
                data,
                flag_envs(plan),
                secret_overrides=secret_overrides,
                environ=environ,
                secrets_by_name=by_name,
                base=base,
            )
        except SpecError as err:
            if by_name and _no_secret_value(err):
                continue  # a path uses a secret: compared below, with its value
            raise
        _compare(plan, dag, task_file)


def check_saved_plan(plan_path: Path, *, secret_overrides: list[str]) -> None:
    """check_jobs_match_task for a plan file not read yet (`jobs launch PLAN.json`)."""
    import os

    from skyform.plan.planfile import read_plan

    plan, _ = read_plan(plan_path)
    check_jobs_match_task(
        plan, plan_path, secret_overrides=secret_overrides, environ=dict(os.environ)
    )


def _compare(plan: Plan, dag: Dag, task_file: Path) -> None:
    """The plan records the task's paths inside its base relative to it (spec/portable.py);
    a plan of the previous format (its base absolute) recorded them absolute: read as such."""
    _undeclared_need_values(plan, dag)
    legacy = plan.task.relative_to is not None and Path(plan.task.relative_to).is_absolute()
    problems = [_problem(plan, recorded) for recorded in (portable_dag(dag), dag)[: 1 + legacy]]
    if all(problems):
        _refuse(problems[0], task_file)


def _problem(plan: Plan, dag: Dag) -> str:
    """The first field of the plan that is not what `dag` makes ("" when none is)."""
    if "sha256:" + task_digest(dag) != plan.task.digest:
        return "task.digest"
    for i, placement in enumerate(plan.tasks):
        field = _mismatch(placement, dag)
        if field is not None:
            return f"tasks.{i}.job.{field}"
    return ""


def _undeclared_need_values(plan: Plan, dag: Dag) -> None:
    """A secret the plan lists and the file does not declare came from `--secret` at plan
    time: apply needs that flag again (the environment gives only what the file declares,
    so a plan cannot choose which of CI's variables reach a job)."""
    known = {name for task in dag.tasks for name in task.secret_names()}
    for placement in plan.tasks:
        for name in placement.job.secrets:
            if name not in known:
                raise SpecError(
                    f"secret {name} of task {placement.task!r} has no value",
                    f"The task file does not declare {name} (it was given to plan with "
                    f"--secret): pass it to apply too, --secret {name}=VALUE.",
                )


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
    from skyform.plan.specs import job_spec

    return _differs(placement.job, job_spec(task, label, placement.offer))  # buckets: its cloud
