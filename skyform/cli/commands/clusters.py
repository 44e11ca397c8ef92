"""Cluster verbs: `status`, `down`."""

from __future__ import annotations

import functools

import typer

from skyform.cli import options


def register(app: typer.Typer) -> None:
    app.command("status")(status)
    app.command("down")(down)


def status(
    clusters: list[str] = typer.Argument(None, help="Only these clusters."),
    all_users: bool = typer.Option(
        False,
        "--all-users",
        "-a",
        help="Every user's clusters, as in SkyPilot. This state is yours alone, so it lists "
        "what plain status lists.",
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Nodes, jobs and stack too."),
    refresh: bool = typer.Option(
        False, "--refresh", "-r", help="Ask each engine whether the nodes are still alive."
    ),
    json_out: bool = options.JSON,
) -> None:
    """Clusters skyform manages: NAME, INFRA, RESOURCES, STATUS, AUTOSTOP, LAUNCHED, COST/hr.

    What a cluster's autostop did is taken in here: local clusters on every call, the others
    with --refresh (a torn-down cluster disappears, a stopped one shows STOPPED)."""
    del all_users  # accepted for SkyPilot users' habit; there is no other user's state here
    from skyform.paths import state_path

    if not state_path().exists():  # a fresh machine: answer without loading models or rich
        from skyform.cli.render.empty import render_no_clusters

        render_no_clusters(as_json=json_out)
        return
    from skyform.cli.render.clusters import render_status
    from skyform.state.db import open_state

    db = open_state()
    try:
        records = [db.require_cluster(n) for n in clusters] if clusters else db.list_clusters()
        health: dict = {}
        notes: list[str] = []
        if any(r.spec.autostop for r in records):
            from skyform.config import load_config
            from skyform.lifecycle.autostop import converge_all

            records, notes = converge_all(
                db, load_config(), records, remote=refresh, emit=lambda _m: None
            )
        if refresh:
            from skyform.config import load_config
            from skyform.stacks.registry import engine_for

            config = load_config()
            for r in records:
                if r.handle is not None:
                    engine = engine_for(r.spec.offer.cloud, config=config, state=db)
                    health[r.name] = engine.refresh(r.handle)
        jobs = {r.name: db.list_jobs(r.name) for r in records}
    finally:
        db.close()
    render_status(
        records, jobs, health, verbose=verbose, as_json=json_out, notes=notes, refreshed=refresh
    )


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
    from skyform.config import load_config
    from skyform.ops.down import down_targets, take_down
    from skyform.state.db import open_state, state_path

    if all_clusters and not clusters and not state_path().exists():
        ConsoleProgress().console.print("No existing clusters.")
        return 0
    config = load_config()
    db = open_state()
    progress = ConsoleProgress()
    try:
        targets = down_targets(db, list(clusters or []), every=all_clusters)
        print_warnings(targets.kept)
        if not targets.records:
            progress.console.print("No clusters to tear down.")
            return 0
        names = [r.name for r in targets.records]
        confirm(f"Tear down {', '.join(names)}?", yes)
        for name in names:
            record = db.require_cluster(name)
            progress.stage(name, "destroy", record.spec.offer.infra)
            left = take_down(
                db,
                config,
                name,
                purge=purge,
                emit=functools.partial(progress.event, name, "destroy", None),
            )
            progress.stage(name, "down", "purged from state" if left else "terminated")
    finally:
        db.close()
    return 0
