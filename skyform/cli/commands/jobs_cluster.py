"""Job verbs on one cluster: `queue`, `logs`, `cancel`."""

from __future__ import annotations

import typer

from skyform.cli import options


def register(app: typer.Typer) -> None:
    app.command("queue")(queue)
    app.command("logs")(logs)
    app.command("cancel")(cancel)


def queue(
    cluster: str = typer.Argument(..., help="Cluster name."),
    json_out: bool = options.JSON,
) -> None:
    """Jobs on a cluster: ID, NAME, SUBMITTED, STARTED, DURATION, RESOURCES, STATUS, LOG."""
    from skyform.cli.render.clusters import render_queue
    from skyform.cli.render.messages import print_warnings
    from skyform.cluster_jobs import refresh_jobs
    from skyform.state.db import open_state

    db = open_state()
    try:
        record = db.require_cluster(cluster)
        jobs, warnings = refresh_jobs(db, record)
    finally:
        db.close()
    print_warnings(warnings)
    render_queue(cluster, jobs, as_json=json_out)


def logs(
    cluster: str = typer.Argument(..., help="Cluster name."),
    job_id: int | None = typer.Argument(None, help="Job id (default: the latest)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep streaming until it ends."),
    node: int | None = typer.Option(None, "--node", "-n", help="Only this node rank."),
) -> int:
    """Print a job's logs: its setup's output (when it ran one), then its run's; every node,
    prefixed by rank. With --follow, until the job ends (Ctrl-C stops following, not the job)."""
    from skyform.cli.render.messages import print_notes, print_warnings
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.cluster_jobs import stream_logs
    from skyform.state.db import open_state

    progress = ConsoleProgress()
    db = open_state()
    try:
        record = db.require_cluster(cluster)
        final = stream_logs(
            db,
            record,
            job_id,
            follow=follow,
            node=node,
            on_log=lambda line: progress.log(cluster, line),
        )
    finally:
        db.close()
    if not final.job.never_ran:
        progress.job_end(final.job)
    print_warnings(final.warnings)
    print_notes(final.notes)
    return 1 if follow and final.job.status.value.startswith("FAILED") else 0


def cancel(
    cluster: str = typer.Argument(..., help="Cluster name."),
    job_ids: list[int] = typer.Argument(None, help="Job ids to cancel."),
    all_jobs: bool = typer.Option(False, "--all", "-a", help="Cancel every unfinished job."),
) -> None:
    """Cancel jobs on a cluster (their process groups are killed on every node)."""
    from skyform.cli.render.console import make_console
    from skyform.cluster_jobs import cancel_jobs
    from skyform.errors import SkyformError
    from skyform.state.db import open_state

    if not job_ids and not all_jobs:
        raise SkyformError("say which jobs to cancel", "Pass job ids, or --all.")
    db = open_state()
    try:
        record = db.require_cluster(cluster)
        cancelled = cancel_jobs(db, record, job_ids or None)
    finally:
        db.close()
    console = make_console()
    for job in cancelled:
        console.print(f"{cluster}: job {job.job_id} {job.status.value}")
    if not cancelled:
        console.print(f"{cluster}: no unfinished jobs to cancel")
