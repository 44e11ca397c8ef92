"""`skyform logs`: a job's output on a cluster."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("logs")(logs)


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
    from skyform.ops.cluster_jobs import job_status, logs_of

    progress = ConsoleProgress()
    if status:
        job = job_status(cluster, job_id)
        progress.console.print(f"Job {job.job_id}: {job.status.value}")
        return job.status.exit_code
    final = logs_of(
        cluster, job_id, follow=follow, node=node, on_log=lambda line: progress.log(cluster, line)
    )
    if not final.job.never_ran:
        progress.job_end(final.job)
    print_warnings(final.warnings)
    print_notes(final.notes)
    return final.job.status.exit_code
