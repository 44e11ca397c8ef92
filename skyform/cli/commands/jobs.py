"""`skyform jobs ...`: managed jobs that survive preemption (launch, queue, logs, cancel, plans)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from skyform.cli import options
from skyform.cli.options import Minimize

if TYPE_CHECKING:
    from skyform.state.db import StateDB

jobs_app = typer.Typer(
    help="Managed jobs: recover from lost capacity by re-planning.", no_args_is_help=True
)


class Recovery(str, Enum):
    failover = "failover"
    eager_next_region = "eager_next_region"


def register(app: typer.Typer) -> None:
    app.add_typer(jobs_app, name="jobs")


@contextmanager
def _open() -> Iterator[tuple[StateDB, list[int]]]:
    """The store, and the managed jobs whose dead controller was started again."""
    from skyform.ops.managed.launch import ensure_controllers
    from skyform.state.db import open_state

    with open_state() as db:
        yield db, ensure_controllers(db)


@jobs_app.command("launch")
@options.resource_flags
def launch(
    target: Path = typer.Argument(..., help="A task YAML, or a reviewed plan.json."),
    name: str | None = typer.Option(None, "--name", "-n", help="The managed job's name."),
    recovery: Recovery | None = typer.Option(None, "--recovery", help="Recovery strategy."),
    max_restarts: int | None = typer.Option(
        None, "--max-restarts-on-errors", min=0, help="Restarts on user-code failures."
    ),
    detach: bool = typer.Option(False, "--detach", "-d", help="Return once submitted."),
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
    from skyform.errors import SkyformError
    from skyform.ops.managed import launch as launching
    from skyform.spec.loader import refuse_stdin

    refuse_stdin(target)
    strategy = recovery.value if recovery else None
    if is_plan_file(target) and (env or env_file or overrides):
        raise SkyformError(
            "--env and --env-file belong to the plan (as do resource flags), not to jobs launch "
            "of a saved plan",
            "Pass them to `skyform plan`, then launch the new plan (--secret is still given "
            "here: secret values never go into a plan).",
        )
    confirm_on_terminal(f"Launch a managed job from {target}?", yes)
    with _open() as (db, _):
        if is_plan_file(target):
            record = launching.launch_plan(
                db,
                target,
                secret_overrides=secret,
                strategy=strategy,
                max_restarts=max_restarts,
                name=name,
            )
        else:
            record = launching.launch(
                db,
                target,
                load_kwargs=options.task_inputs(env, env_file, secret, overrides),
                strategy=strategy,
                max_restarts=max_restarts,
                objective=minimize.value,
                name=name,
            )
        services = [
            lease.name.removeprefix("controller/") for lease in db.list_leases("controller/")
        ]
    render_launched(record)
    if services:
        typer.echo(f"Submitted: controller {', '.join(services)} will run it.", err=True)
    elif db.kind != "sqlite":
        typer.echo("No controller is registered: started one on this machine.", err=True)
    if detach:
        return 0
    return _follow(record.id)


def _follow(job_id: int) -> int:
    """Stream the job until it ends; its exit code. Ctrl-C stops following, not the job."""
    from skyform.cli.render.jobs import JobLogPrinter, exit_code_for, render_detached
    from skyform.errors import Interrupted
    from skyform.ops.managed.logs import stream
    from skyform.state.db import open_state

    printer = JobLogPrinter()
    try:
        with open_state() as db:
            record = stream(db, job_id, follow=True, on_line=printer.line, on_note=printer.note)
    except KeyboardInterrupt:
        render_detached(job_id)
        return Interrupted.exit_code
    return exit_code_for(record.status)


@jobs_app.command("queue")
def queue(json_out: bool = options.JSON) -> None:
    """Managed jobs and their status (a dead controller is started again)."""
    from skyform.cli.render.jobs import render_jobs_queue
    from skyform.cli.render.messages import print_warnings
    from skyform.state.managed import ManagedJobs

    with _open() as (db, restarted):
        records = ManagedJobs(db).list()
    print_warnings([f"the controller of job {i} had died: started it again" for i in restarted])
    render_jobs_queue(records, as_json=json_out)


@jobs_app.command("logs")
def logs(
    job_id: int = typer.Argument(..., help="Managed job id."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Follow across recoveries."),
    controller: bool = typer.Option(False, "--controller", help="The controller's own log."),
) -> int:
    """A managed job's output (saved logs of earlier attempts, then the current one)."""
    from skyform.cli.render.jobs import JobLogPrinter
    from skyform.ops.managed import jobdir
    from skyform.ops.managed.logs import stream
    from skyform.state.managed import ManagedJobs

    with _open() as (db, _):
        ManagedJobs(db).require(job_id)
        if controller:
            typer.echo(jobdir.controller_log(job_id).read_text(), nl=False)
            return 0
    if follow:
        return _follow(job_id)
    printer = JobLogPrinter()
    with _open() as (db, _):
        stream(db, job_id, follow=False, on_line=printer.line, on_note=printer.note)
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
    from skyform.ops.managed.cancel import cancel_jobs

    if not job_ids and not all_jobs:
        raise SkyformError("say which managed jobs to cancel", "Pass job ids, or --all.")
    which = (
        "every unfinished managed job"
        if all_jobs
        else "managed job(s) " + ", ".join(map(str, job_ids))
    )
    confirm_on_terminal(f"Cancel {which}?", yes)
    with _open() as (db, _):
        results = cancel_jobs(db, job_ids or None)
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
    from skyform.errors import SkyformError
    from skyform.plan.planfile import read_plan
    from skyform.state.managed import ManagedJobs

    with _open() as (db, _):
        ManagedJobs(db).require(job_id)
        revisions = ManagedJobs(db).revisions(job_id)
    if show is None:
        render_revisions(job_id, revisions, as_json=json_out)
        return
    chosen = [r for r in revisions if r.revision == show]
    if not chosen:
        raise SkyformError(f"managed job {job_id} has revisions 1..{len(revisions)}, not {show}")
    plan, _ = read_plan(Path(chosen[0].path))
    emit_plan(plan, as_json=json_out)
