"""`skyform apply PLAN.json` (exactly the reviewed plan) or `skyform apply TASK.yaml` (plan,
show, confirm, apply — like `terraform apply` without a saved plan)."""

from __future__ import annotations

from pathlib import Path

import typer

from skyform.cli import options
from skyform.cli.options import Minimize, is_plan_file
from skyform.cli.prompts import confirm, confirm_on_terminal

TAKE_OVER = typer.Option(
    False,
    "--take-over",
    help="Go ahead when the plan acts on a cluster another task file or a managed job made.",
)

REPLACE = typer.Option(
    [],
    "--replace",
    metavar="CLUSTER",
    help="Let the plan destroy CLUSTER and make it again (a changed resource that forces "
    "it); on a terminal you confirm it on its own (-y does not). Repeatable. Without it, "
    "launch and apply of a task never destroy a cluster.",
)
LOCK_TIMEOUT = typer.Option(
    None,
    "--lock-timeout",
    min=0,
    metavar="SECONDS",
    help="Wait this long for another command's lock on a cluster (as Terraform's "
    "-lock-timeout; default 5, or SKYFORM_LOCK_WAIT). A plan applied after the wait is "
    "checked again: if the other apply changed the cluster, it is stale (exit 3).",
)
EXPECT_DIGEST = typer.Option(
    None,
    "--expect-digest",
    metavar="sha256:…",
    help="Apply only if the plan's content digest is this one (the digest `show --markdown` "
    "posted for review); for CI.",
)


def register(app: typer.Typer) -> None:
    app.command("apply")(apply)


def plan_and_show(task_file: Path, *, minimize: Minimize, cluster: str | None, inputs, verb: str):
    """Plan a task file now (never saved) and print the plan with its warnings; `verb`
    (apply, launch) cannot run a job group; `launch` places only on infra usable here."""
    from skyform.cli.render.messages import print_warnings
    from skyform.cli.render.plan_output import emit_plan
    from skyform.ops.plan import plan_task

    result = plan_task(
        task_file,
        objective=minimize.value,
        cluster=cluster,
        inputs=inputs,
        refuse_group=verb,
        usable_only=verb == "launch",  # as `sky launch`; `apply TASK` places as `plan` does
    )
    print_warnings(result.warnings)
    emit_plan(result.plan)
    return result.plan


def confirm_plan(plan, *, yes: bool, take_over: bool, replace: list[str], verb: str) -> bool:
    """Ask before a plan made here runs; whether it may take clusters over. A cluster the
    plan destroys must be named with --replace, and is then confirmed on its own on a
    terminal: -y approves a plan, never a replacement (in a script, --replace CLUSTER is the
    asking out loud)."""
    from skyform.ops.apply import destroyed, replacements

    doomed = replacements(plan, replace, verb=verb)
    if doomed:
        confirm_on_terminal(f"Destroy {destroyed(doomed)}? Everything on its nodes is lost.")
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
    return take_over


@options.launch_flags
def apply(
    target: Path = typer.Argument(..., help="A saved plan (plan.json) or a task YAML."),
    yes: bool = options.YES,
    detach: bool = typer.Option(False, "--detach", "-d", help="Return once the job is submitted."),
    cluster: str | None = typer.Option(None, "--cluster", "-c", help="Cluster name (task YAML)."),
    minimize: Minimize = options.MINIMIZE,
    env: list[str] = options.ENV,
    env_file: list[Path] = options.ENV_FILE,
    secret: list[str] = options.SECRET,
    take_over: bool = TAKE_OVER,
    replace: list[str] = REPLACE,
    expect_digest: str | None = EXPECT_DIGEST,
    lock_timeout: float | None = LOCK_TIMEOUT,
    overrides=None,
) -> int:
    """Apply a saved plan exactly; or plan a task file, show it, confirm, and apply."""
    from skyform.cli.render.apply import render_apply_result
    from skyform.cli.render.plan_output import emit_plan
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.errors import SkyformError
    from skyform.ops import planfiles
    from skyform.ops.applier import ApplyOptions
    from skyform.ops.apply import apply_plan
    from skyform.ops.plan import refuse_stdin

    refuse_stdin(target)  # a plan or a task: neither is read from stdin
    if is_plan_file(target):
        if env or env_file or cluster or overrides:
            raise SkyformError(
                "--env, --env-file and --cluster belong to the plan (as do resource flags), "
                "not to apply of a saved plan",
                "Pass them to `skyform plan`.",
            )
        if replace:
            raise SkyformError(
                "--replace is for a task file: a saved plan is applied as it was reviewed, "
                "its replacements included",
                f"Apply it without --replace: skyform apply {target}",
            )
        plan, _ = planfiles.read_reviewed(target, expect_digest)
        plan_path = target
    else:
        inputs = options.task_inputs(env, env_file, secret, overrides)
        plan = plan_and_show(
            target, minimize=minimize, cluster=cluster, inputs=inputs, verb="apply"
        )
        planfiles.require_digest(plan, expect_digest, "the plan made now")
        plan_path = planfiles.unsaved()
        if not plan.summary.has_changes:
            return 0
        take_over = confirm_plan(plan, yes=yes, take_over=take_over, replace=replace, verb="apply")
    if not plan.summary.has_changes:
        emit_plan(plan)
        return 0
    run = ApplyOptions(
        detach=detach,
        secret_overrides=secret,
        take_over=take_over,
        lock_wait=lock_timeout,
        command=f"skyform apply {target}",
    )
    outcomes = apply_plan(
        plan, plan_path, progress=ConsoleProgress(names=plan.shown_names()), options=run
    )
    render_apply_result(plan, outcomes, detach=detach)
    return 1 if any(o.failed for o in outcomes) else 0
