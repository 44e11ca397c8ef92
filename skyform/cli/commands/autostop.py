"""`autostop`, `stop`, `start`: SkyPilot's verbs for idle and stopped clusters."""

from __future__ import annotations

import typer

from skyform.cli import options


def register(app: typer.Typer) -> None:
    app.command("autostop")(autostop)
    app.command("stop")(stop)
    app.command("start")(start)


def autostop(
    clusters: list[str] = typer.Argument(..., help="Clusters to set autostop on."),
    idle_minutes: int | None = typer.Option(
        None,
        "--idle-minutes",
        "-i",
        min=0,
        help="Idle minutes before it stops (with --down: is torn down). Default 5.",
    ),
    down: bool = typer.Option(False, "--down", help="Tear it down when idle instead."),
    wait_for: str | None = typer.Option(
        None,
        "--wait-for",
        metavar="jobs_and_ssh|jobs|none",
        help="What counts as activity (default: jobs and interactive SSH sessions).",
    ),
    cancel: bool = typer.Option(False, "--cancel", help="Cancel autostop on these clusters."),
    yes: bool = options.YES,
) -> None:
    """Stop (or tear down) clusters after they have been idle: decided on the cluster."""
    del yes  # accepted as in `sky autostop -y`; nothing here asks
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.ops.autostop import autostop_clusters
    from skyform.ops.clusters import shown_names

    progress = ConsoleProgress(names=shown_names())
    chosen = autostop_clusters(
        clusters, idle_minutes=idle_minutes, down=down, wait_for=wait_for, cancel=cancel
    )
    for name, setting in chosen:
        progress.stage(
            name,
            "autostop",
            "cancelled" if setting is None else f"{setting.short} (the countdown starts now)",
        )


def stop(
    clusters: list[str] = typer.Argument(..., help="Clusters to stop."),
    yes: bool = options.YES,
) -> None:
    """Stop clusters: compute stops, disks (ssh pools: hosts, workdir, setup) are kept."""
    from skyform.cli.prompts import confirm
    from skyform.ops.stopstart import stop_clusters

    names = list(dict.fromkeys(clusters))
    confirm(f"Stop {', '.join(names)}?", yes)
    _each(names, "stop", stop_clusters, ("stopped", "`skyform start` resumes it"))


def start(
    clusters: list[str] = typer.Argument(..., help="Stopped clusters to start."),
    yes: bool = options.YES,
) -> None:
    """Start stopped clusters where they were, with their autostop setting restored."""
    del yes  # as `sky start -y`: starting asks nothing here
    from skyform.ops.stopstart import start_clusters

    _each(list(dict.fromkeys(clusters)), "start", start_clusters, ("started", "up again"))


def _each(names: list[str], stage: str, verb, done: tuple[str, str]) -> None:
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.ops.clusters import shown_names

    progress = ConsoleProgress(names=shown_names())

    def emit(name: str, message: str) -> None:
        progress.event(name, stage, None, message)

    for name, changed in verb(names, emit=emit):
        if changed:  # "already up/stopped" was said by the event
            progress.stage(name, *done)
