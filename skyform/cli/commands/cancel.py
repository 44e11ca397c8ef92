"""`skyform cancel`: cancel jobs on a cluster."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("cancel")(cancel)


def cancel(
    cluster: str = typer.Argument(..., help="Cluster name."),
    job_ids: list[int] = typer.Argument(None, help="Job ids to cancel."),
    all_jobs: bool = typer.Option(False, "--all", "-a", help="Cancel every unfinished job."),
) -> None:
    """Cancel jobs on a cluster (their process groups are killed on every node)."""
    from skyform.cli.render.console import make_console
    from skyform.errors import SkyformError
    from skyform.ops.cluster_jobs import cancel_on

    if not job_ids and not all_jobs:
        raise SkyformError("say which jobs to cancel", "Pass job ids, or --all.")
    cancelled = cancel_on(cluster, job_ids or None)
    console = make_console()
    for job in cancelled:
        console.print(f"{cluster}: job {job.job_id} {job.status.value}")
    if not cancelled:
        console.print(f"{cluster}: no unfinished jobs to cancel")
