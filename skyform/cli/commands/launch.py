"""`skyform launch TASK.yaml`: SkyPilot's `sky launch` — plan, show, confirm, apply, and run
the job every time (on the existing cluster when nothing else changed)."""

from __future__ import annotations

from pathlib import Path

import typer

from skyform.cli import options
from skyform.cli.commands.apply import REPLACE, TAKE_OVER
from skyform.cli.options import Minimize


def register(app: typer.Typer) -> None:
    app.command("launch")(launch)


@options.launch_flags
def launch(
    task_file: Path | None = typer.Argument(
        None,
        help="Task YAML (SkyPilot format; may be a pipeline). None with -c NAME: a cluster "
        "without a job (a dev box, as `sky launch -c dev --gpus A100` makes).",
    ),
    cluster: str | None = typer.Option(
        None, "--cluster", "-c", help="Cluster name (prefix for pipelines)."
    ),
    yes: bool = options.YES,
    detach: bool = typer.Option(
        False,
        "--detach-run",
        "--detach",
        "-d",
        help="Return once the job is submitted; do not stream logs.",
    ),
    dryrun: bool = typer.Option(False, "--dryrun", help="Plan and show; change nothing."),
    minimize: Minimize = options.MINIMIZE,
    env: list[str] = options.ENV,
    env_file: list[Path] = options.ENV_FILE,
    secret: list[str] = options.SECRET,
    take_over: bool = TAKE_OVER,
    replace: list[str] = REPLACE,
    overrides=None,
) -> int:
    """Launch a task: plan it, show the plan, confirm, apply it and run its job.

    Unlike `apply`, the job runs on every call: when the cluster already matches the task, it
    runs again there (the workdir is synced again, nothing is provisioned). A cluster the
    plan would destroy (a changed resource that forces it) is refused unless named with
    --replace. Exits 0 when the
    job succeeded, 100 when it failed, 103 when it was cancelled (SkyPilot's codes).
    """
    from skyform.cli.commands.apply import confirm_plan, plan_and_show
    from skyform.cli.render.apply import render_apply_result
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.ops import planfiles
    from skyform.ops.applier import ApplyOptions
    from skyform.ops.apply import apply_plan, launch_exit_code
    from skyform.ops.plan import refuse_stdin

    if task_file is None:
        task_file = _dev_box(cluster)
    refuse_stdin(task_file)
    if not task_file.exists() and not task_file.name.endswith((".yaml", ".yml")):
        import shlex

        from skyform.errors import SkyformError

        shown = shlex.quote(str(task_file))
        raise SkyformError(
            f"launch takes a task YAML, and {shown} is not a file",
            "Put the command in a task file's `run:` and launch that; on a cluster that is "
            f"up, run it directly: skyform exec CLUSTER {shown}",
        )
    inputs = options.task_inputs(env, env_file, secret, overrides)
    plan = plan_and_show(
        task_file, minimize=minimize, cluster=cluster, inputs=inputs, verb="launch"
    )
    if dryrun:
        return 0
    if plan.summary.has_changes:
        take_over = confirm_plan(plan, yes=yes, take_over=take_over, replace=replace, verb="launch")
    run = ApplyOptions(
        detach=detach,
        secret_overrides=secret,
        rerun_unchanged=True,
        take_over=take_over,
        command=f"skyform launch {task_file}",
    )
    outcomes = apply_plan(
        plan, planfiles.unsaved(), progress=ConsoleProgress(names=plan.shown_names()), options=run
    )
    render_apply_result(plan, outcomes, detach=detach, verb="Launch")
    return launch_exit_code(outcomes)


def _dev_box(cluster: str | None) -> Path:
    from skyform.errors import SkyformError
    from skyform.ops.devbox import dev_box_task

    if cluster is None:
        raise SkyformError(
            "launch needs a task YAML, or a cluster name for a cluster without a job",
            "Name the dev box: skyform launch -c dev --gpus A100 (where SkyPilot makes up "
            "a name, skyform asks for one)",
        )
    return dev_box_task(cluster)
