"""`skyform jobs ...`: managed jobs that survive preemption (launch, queue, logs, cancel, plans)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path

import typer

from skyform.cli import options
from skyform.cli.groups import verb_group
from skyform.cli.options import Minimize

jobs_app, register = verb_group("jobs", "Managed jobs: recover from lost capacity by re-planning.")


class Recovery(str, Enum):
    failover = "failover"
    eager_next_region = "eager_next_region"


@jobs_app.command("launch")
@options.resource_flags
def launch(
    target: Path = typer.Argument(..., help="A task YAML, or a reviewed plan.json."),
    name: str | None = typer.Option(None, "--name", "-n", help="The managed job's name."),
    recovery: Recovery | None = typer.Option(None, "--recovery", help="Recovery strategy."),
    max_restarts: int | None = typer.Option(
        None, "--max-restarts-on-errors", min=0, help="Restarts on user-code failures."
    ),
    detach: bool = typer.Option(
        False, "--detach-run", "--detach", "-d", help="Return once submitted."
    ),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Do not ask (asked only when stdin is a terminal)."
    ),
    minimize: Minimize = options.MINIMIZE,
    env: list[str] = options.ENV,
    env_file: list[Path] = options.ENV_FILE,
    secret: list[str] = options.SECRET,
    overrides=None,
) -> int:
    """Launch a managed job: planned, applied, watched, and recovered when nodes are lost."""
    from skyform.cli.options import is_plan_file
    from skyform.cli.prompts import confirm_on_terminal
    from skyform.cli.render.jobs import render_launched
    from skyform.cli.render.visible import visible
    from skyform.errors import SkyformError
    from skyform.ops.managed import verbs
    from skyform.ops.plan import refuse_stdin

    refuse_stdin(target)
    strategy = recovery.value if recovery else None
    from_plan = is_plan_file(target)
    if from_plan and (env or env_file or overrides):
        raise SkyformError(
            "--env and --env-file belong to the plan (as do resource flags), not to jobs launch "
            "of a saved plan",
            "Pass them to `skyform plan`, then launch the new plan (--secret is still given "
            "here: secret values never go into a plan).",
        )
    confirm_on_terminal(f"Launch a managed job from {target}?", yes)
    launched = verbs.launch(
        target,
        from_plan=from_plan,
        inputs=options.task_inputs(env, env_file, secret, overrides),
        strategy=strategy,
        max_restarts=max_restarts,
        objective=minimize.value,
        name=name,
    )
    render_launched(launched.record)
    services = visible(", ".join(launched.services))  # names from the store
    if launched.local_controller:
        typer.echo(
            f"Started a controller on this machine: the job syncs "
            f"{visible(', '.join(launched.record.local_paths))} from here, which controller "
            f"{services} cannot reach. Keep this machine running until "
            "the job ends (or sync the files through a bucket or a git workdir).",
            err=True,
        )
    elif launched.services:
        typer.echo(f"Submitted: controller {services} will run it.", err=True)
        if not launched.inputs_shared:
            typer.echo(
                "SKYFORM_PASSPHRASE is not set: the job's task and inputs stay under this "
                "SKYFORM_HOME, so only a controller sharing it can run the job.",
                err=True,
            )
    elif launched.team_store:
        typer.echo("No controller is registered: started one on this machine.", err=True)
    if detach:
        return 0
    return _follow(launched.record.id)


def _follow(job_id: int) -> int:
    """Stream the job until it ends; its exit code. Ctrl-C stops following, not the job."""
    from skyform.cli.render.jobs import JobLogPrinter, exit_code_for, render_detached
    from skyform.errors import Interrupted
    from skyform.ops.managed import verbs

    printer = JobLogPrinter()
    try:
        record = verbs.follow_output(
            job_id, follow=True, on_line=printer.line, on_note=printer.note
        )
    except KeyboardInterrupt:
        render_detached(job_id)
        return Interrupted.exit_code
    return exit_code_for(record.status)


@jobs_app.command("queue")
def queue(json_out: bool = options.JSON) -> None:
    """Managed jobs and their status (a dead controller is started again)."""
    from skyform.cli.render.jobs import render_jobs_queue
    from skyform.cli.render.messages import print_warnings
    from skyform.ops.managed import verbs

    found = verbs.queue()
    restarted = found.restarted
    print_warnings([f"the controller of job {i} had died: started it again" for i in restarted])
    render_jobs_queue(found.records, found.drivers, as_json=json_out)


@jobs_app.command("logs")
def logs(
    job_id: int = typer.Argument(..., help="Managed job id."),
    follow: bool = typer.Option(
        True,
        "--follow/--no-follow",
        "-f",
        help="Stream across recoveries until the job ends (the default, as in SkyPilot); "
        "--no-follow prints what there is and exits.",
    ),
    controller: bool = typer.Option(
        False, "--controller", help="The controller's own log (followed until the job ends)."
    ),
) -> int:
    """A managed job's output (saved logs of earlier attempts, then the current one).
    Follows across recoveries until the job ends, as `sky jobs logs` does (Ctrl-C stops
    following, not the job); --no-follow prints what there is now.

    Following exits with the job's code: 0 it succeeded, 4 no resources were found, 1 any
    other end (failed, cancelled); 130 on Ctrl-C. --no-follow and --controller exit 0.
    """
    from skyform.cli.render.jobs import JobLogPrinter
    from skyform.ops.managed import verbs

    if controller:
        for chunk in verbs.controller_log_chunks(job_id, follow=follow):
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
        return 0
    verbs.require(job_id)
    if follow:
        return _follow(job_id)
    printer = JobLogPrinter()
    verbs.follow_output(job_id, follow=False, on_line=printer.line, on_note=printer.note)
    return 0


@jobs_app.command("cancel")
def cancel(
    job_ids: list[int] = typer.Argument(None, help="Managed job ids."),
    all_jobs: bool = typer.Option(False, "--all", "-a", help="Every unfinished managed job."),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Do not ask (asked only when stdin is a terminal)."
    ),
) -> None:
    """Cancel managed jobs: their controllers stop the jobs and tear their clusters down."""
    from skyform.cli.prompts import confirm_on_terminal
    from skyform.cli.render.console import make_console
    from skyform.errors import SkyformError
    from skyform.ops.managed import verbs

    if not job_ids and not all_jobs:
        raise SkyformError("say which managed jobs to cancel", "Pass job ids, or --all.")
    which = (
        "every unfinished managed job"
        if all_jobs
        else "managed job(s) " + ", ".join(map(str, job_ids))
    )
    confirm_on_terminal(f"Cancel {which}?", yes)
    results = verbs.cancel(job_ids or None)
    console = make_console()
    for record in results:
        console.print(f"managed job {record.id}: {record.status.value}")
    if not results:
        console.print("no unfinished managed jobs to cancel")


@jobs_app.command("plans")
def plans(
    job_id: int = typer.Argument(..., help="Managed job id."),
    show: int | None = typer.Option(None, "--show", help="Show this revision as a plan."),
    json_out: bool = options.JSON,
) -> None:
    """The plan revisions of a managed job (one per recovery); --show N renders one."""
    from skyform.cli.render.jobs import render_revisions
    from skyform.cli.render.plan_output import emit_plan
    from skyform.ops.managed import verbs

    revisions = verbs.revisions(job_id)
    if show is None:
        render_revisions(job_id, revisions, as_json=json_out)
        return
    emit_plan(verbs.revision_plan(job_id, revisions, show), as_json=json_out)
