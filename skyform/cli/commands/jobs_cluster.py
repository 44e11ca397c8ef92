"""Job verbs on one cluster: `queue`, `logs`, `cancel`."""

from __future__ import annotations

import typer

from skyform.cli import options


def register(app: typer.Typer) -> None:
    app.command("queue")(queue)
    app.command("logs")(logs)
    app.command("cancel")(cancel)


def queue(
    clusters: list[str] = typer.Argument(None, help="Clusters (default: every cluster)."),
    json_out: bool = options.JSON,
) -> None:
    """Jobs on clusters: ID, NAME, SUBMITTED, STARTED, DURATION, RESOURCES, STATUS, LOG."""
    from skyform.cli.render.clusters import render_queues
    from skyform.cli.render.messages import print_warnings
    from skyform.ops.cluster_jobs import refresh_queues
    from skyform.state.db import open_state, state_path

    if not clusters and not state_path().exists():
        render_queues([], as_json=json_out)
        return
    db = open_state()
    try:
        queues, warnings = refresh_queues(db, list(clusters or []))
    finally:
        db.close()
    print_warnings(warnings)
    render_queues(queues, as_json=json_out, headings=not clusters or len(clusters) > 1)


def logs(
    cluster: str = typer.Argument(..., help="Cluster name."),
    job_id: int | None = typer.Argument(None, help="Job id (default: the latest)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep streaming until it ends."),
    node: int | None = typer.Option(None, "--node", "-n", help="Only this node rank."),
    status: bool = typer.Option(
        False, "--status", help="Print only the job's status; exit with its code (below)."
    ),
) -> int:
    """Print a job's logs: its setup's output (when it ran one), then its run's; every node,
    prefixed by rank. With --follow, until the job ends (Ctrl-C stops following, not the job).

    Exits as `sky logs` does (SkyPilot's JobExitCode): 0 the job succeeded, 100 it failed
    (run or setup), 101 it has not finished (without --follow), 102 no such job, 103 it was
    cancelled.
    """
    from skyform.cli.render.messages import print_notes, print_warnings
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.ops.cluster_jobs import current_job, stream_logs
    from skyform.state.db import open_state

    progress = ConsoleProgress()
    db = open_state()
    try:
        record = db.require_cluster(cluster)
        if status:
            job = current_job(db, record, job_id)
            progress.console.print(f"Job {job.job_id}: {job.status.value}")
            return job.status.exit_code
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
    return final.job.status.exit_code


def cancel(
    cluster: str = typer.Argument(..., help="Cluster name."),
    job_ids: list[int] = typer.Argument(None, help="Job ids to cancel."),
    all_jobs: bool = typer.Option(False, "--all", "-a", help="Cancel every unfinished job."),
) -> None:
    """Cancel jobs on a cluster (their process groups are killed on every node)."""
    from skyform.cli.render.console import make_console
    from skyform.errors import SkyformError
    from skyform.ops.cluster_jobs import cancel_jobs
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
