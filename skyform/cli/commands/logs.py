"""`skyform logs`: a job's output on a cluster."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("logs")(logs)


def logs(
    cluster: str = typer.Argument(..., help="Cluster name."),
    job_id: int | None = typer.Argument(None, help="Job id (default: the latest)."),
    follow: bool = typer.Option(
        True,
        "--follow/--no-follow",
        "-f",
        help="Stream until the job ends (the default, as in SkyPilot); --no-follow prints "
        "what there is and exits.",
    ),
    tail: int | None = typer.Option(
        None,
        "--tail",
        "-n",
        min=0,
        help="Only the last N lines of each node's output to begin with (SkyPilot's "
        "--tail; -n as in `tail -n`). 0 or absent: all of it.",
    ),
    node: int | None = typer.Option(None, "--node", help="Only this node rank (0: the head)."),
    status: bool = typer.Option(
        False, "--status", help="Print only the job's status; exit with its code (below)."
    ),
) -> int:
    """Print a job's logs: its setup's output (when it ran one), then its run's; every node,
    prefixed by rank. Follows until the job ends, as `sky logs` does (Ctrl-C stops following,
    not the job); --no-follow prints what there is now.

    Exits as `sky logs` does (SkyPilot's JobExitCode): 0 the job succeeded, 100 it failed
    (run or setup), 101 it has not finished (with --no-follow), 102 no such job, 103 it was
    cancelled.
    """
    from skyform.cli.render.messages import print_notes, print_warnings
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.ops.cluster_jobs import job_status, logs_of
    from skyform.ops.clusters import shown_names

    progress = ConsoleProgress(names=shown_names())
    if status:
        job = job_status(cluster, job_id)
        progress.console.print(f"Job {job.job_id}: {job.status.value}")
        return job.status.exit_code
    final = logs_of(
        cluster,
        job_id,
        follow=follow,
        node=node,
        tail=tail or None,  # SkyPilot's --tail 0: every line
        on_log=lambda line: progress.log(cluster, line),
    )
    if not final.job.never_ran:
        progress.job_end(final.job)
    print_warnings(final.warnings)
    print_notes(final.notes)
    return final.job.status.exit_code
