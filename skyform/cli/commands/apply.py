"""`skyform apply PLAN.json` (exactly the reviewed plan) or `skyform apply TASK.yaml` (plan,
show, confirm, apply — like `terraform apply` without a saved plan)."""

from __future__ import annotations

from pathlib import Path

import typer

from skyform.cli import options
from skyform.cli.commands.plan import Minimize
from skyform.cli.options import is_plan_file
from skyform.cli.prompts import confirm


def register(app: typer.Typer) -> None:
    app.command("apply")(apply)


def apply(
    target: Path = typer.Argument(..., help="A saved plan (plan.json) or a task YAML."),
    yes: bool = options.YES,
    detach: bool = typer.Option(False, "--detach", "-d", help="Return once the job is submitted."),
    cluster: str | None = typer.Option(None, "--cluster", "-c", help="Cluster name (task YAML)."),
    minimize: Minimize = typer.Option(Minimize.cost, "--minimize", help="Objective (task YAML)."),
    env: list[str] = options.ENV,
    env_file: list[Path] = options.ENV_FILE,
    secret: list[str] = options.SECRET,
    take_over: bool = typer.Option(
        False,
        "--take-over",
        help="Go ahead when the plan acts on a cluster another task file or a managed job made.",
    ),
) -> int:
    """Apply a saved plan exactly; or plan a task file, show it, confirm, and apply."""
    from skyform.apply.runner import Applier, ApplyOptions
    from skyform.cli.render.apply import render_apply_result
    from skyform.cli.render.messages import print_warnings
    from skyform.cli.render.plan_output import emit_plan
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.config import load_config
    from skyform.errors import SkyformError
    from skyform.plan.catalog import load_catalog
    from skyform.plan.planfile import plan_bytes, plan_digest, read_plan
    from skyform.state.db import open_state

    if is_plan_file(target):
        if env or env_file or cluster:
            raise SkyformError(
                "--env, --env-file and --cluster belong to the plan, not to apply of a saved plan",
                "Pass them to `skyform plan`.",
            )
        plan, data = read_plan(target)
        plan_path = target
    else:
        from skyform.planning import plan_task

        result = plan_task(
            target,
            objective=minimize.value,
            cluster=cluster,
            load_kwargs=options.task_inputs(env, env_file, secret),
        )
        print_warnings(result.warnings)
        plan, data = result.plan, plan_bytes(result.plan)
        plan_path = Path.cwd() / ".skyform-unsaved-plan.json"  # only its directory is used
        emit_plan(plan)
        if not plan.summary.has_changes:
            return 0
        if plan.takeovers and not take_over:
            # -y approves the plan, not taking someone else's cluster: that needs its own yes
            taken = ", ".join(f"{c.cluster} ({c.takes_over})" for c in plan.takeovers)
            confirm(
                f"This plan takes over {taken}. Do you want to take it over?",
                False,
                hint="Pass --take-over to go ahead (-y alone does not take a cluster over).",
            )
            take_over = True
        confirm("Do you want to perform these actions?", yes)
    if not plan.summary.has_changes:
        emit_plan(plan)
        return 0
    config = load_config()
    db = open_state()
    try:
        applier = Applier(
            plan,
            plan_path,
            plan_digest(data),
            db=db,
            config=config,
            catalog=load_catalog(config),
            progress=ConsoleProgress(),
            options=ApplyOptions(detach=detach, secret_overrides=secret, take_over=take_over),
        )
        outcomes = applier.run()
    finally:
        db.close()
    render_apply_result(plan, outcomes, detach=detach)
    return 1 if any(o.failed for o in outcomes) else 0
