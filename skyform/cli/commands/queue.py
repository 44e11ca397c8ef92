"""`skyform queue`: the jobs on clusters."""

from __future__ import annotations

import typer

from skyform.cli import options


def register(app: typer.Typer) -> None:
    app.command("queue")(queue)


def queue(
    clusters: list[str] = typer.Argument(None, help="Clusters (default: every cluster)."),
    skip_finished: bool = typer.Option(
        False, "--skip-finished", "-s", help="Only jobs that have not ended (as in SkyPilot)."
    ),
    all_users: bool = typer.Option(
        False,
        "--all-users",
        "-u",
        "-a",
        help="Every user's jobs, as in SkyPilot. This state is yours alone, so it lists what "
        "plain queue lists.",
    ),
    json_out: bool = options.JSON,
) -> None:
    """Jobs on clusters: ID, NAME, SUBMITTED, STARTED, DURATION, RESOURCES, STATUS, LOG."""
    del all_users  # accepted for SkyPilot users' habit; there is no other user's state here
    from skyform.cli.render.clusters import render_queues
    from skyform.cli.render.messages import print_warnings
    from skyform.ops.cluster_jobs import queue_of
    from skyform.ops.clusters import has_state

    if not clusters and not has_state():
        render_queues([], as_json=json_out)
        return
    queues, warnings = queue_of(list(clusters or []), skip_finished=skip_finished)
    print_warnings(warnings)
    render_queues(queues, as_json=json_out, headings=not clusters or len(clusters) > 1)
