"""`skyform down`: tear clusters down."""

from __future__ import annotations

import typer

from skyform.cli import options


def register(app: typer.Typer) -> None:
    app.command("down")(down)


def down(
    clusters: list[str] = typer.Argument(None, help="Clusters to tear down."),
    all_clusters: bool = typer.Option(
        False, "--all", "-a", help="Every cluster (except those a managed job runs on)."
    ),
    purge: bool = typer.Option(
        False,
        "--purge",
        help="Forget a cluster whose infra cannot be torn down (unreachable, SDK missing), "
        "after saying what may be left.",
    ),
    yes: bool = options.YES,
) -> int:
    """Tear clusters down: stop their jobs, release or delete their nodes, forget them."""
    from skyform.cli.prompts import confirm
    from skyform.cli.render.messages import print_warnings
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.ops.clusters import DownReport, down_clusters, has_state, shown_names

    progress = ConsoleProgress(names=shown_names())
    if all_clusters and not clusters and not has_state():
        progress.console.print("No existing clusters.")
        return 0
    report = DownReport(
        kept=print_warnings,
        confirm=lambda names: confirm(f"Tear down {', '.join(map(progress.shown, names))}?", yes),
        stage=progress.stage,
        event=lambda name, message: progress.event(name, "destroy", None, message),
    )
    if not down_clusters(list(clusters or []), every=all_clusters, purge=purge, report=report):
        progress.console.print("No clusters to tear down.")
    return 0
