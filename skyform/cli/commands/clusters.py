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
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Nodes, jobs and stack too."),
    refresh: bool = typer.Option(
        False, "--refresh", "-r", help="Ask each engine whether the nodes are still alive."
    ),
    json_out: bool = options.JSON,
) -> None:
    """Clusters skyform manages: NAME, INFRA, RESOURCES, STATUS, LAUNCHED, COST/hr."""
    from skyform.cli.render.clusters import render_status
    from skyform.state.db import open_state, state_path

    if not state_path().exists():
        render_status([], {}, {}, verbose=verbose, as_json=json_out)
        return
    db = open_state()
    try:
        records = [db.require_cluster(n) for n in clusters] if clusters else db.list_clusters()
        health = {}
        if refresh:
            from skyform.config import load_config
            from skyform.stacks.engine import engine_for

            config = load_config()
            for r in records:
                if r.handle is not None:
                    engine = engine_for(r.spec.offer.cloud, config=config, state=db)
                    health[r.name] = engine.refresh(r.handle)
        jobs = {r.name: db.list_jobs(r.name) for r in records}
    finally:
        db.close()
    render_status(records, jobs, health, verbose=verbose, as_json=json_out)


def down(
    clusters: list[str] = typer.Argument(..., help="Clusters to tear down."),
    yes: bool = options.YES,
) -> None:
    """Tear clusters down: stop their jobs, release or delete their nodes, forget them."""
    from skyform.apply import clusters as lifecycle
    from skyform.cli.prompts import confirm
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.config import load_config
    from skyform.recovery.cancel import refuse_managed_clusters
    from skyform.state.db import open_state
    from skyform.state.lock import cluster_lock

    config = load_config()
    db = open_state()
    progress = ConsoleProgress()
    try:
        records = [db.require_cluster(n) for n in dict.fromkeys(clusters)]
        refuse_managed_clusters(db, [r.name for r in records])
        confirm(f"Tear down {', '.join(r.name for r in records)}?", yes)
        for record in records:
            with cluster_lock(record.name, purpose=f"skyform down {record.name}"):
                refuse_managed_clusters(db, [record.name])  # a job launched since the prompt
                current = db.require_cluster(record.name)
                progress.stage(record.name, "destroy", f"{current.spec.offer.infra}")
                lifecycle.destroy(
                    db,
                    config,
                    current,
                    reason="skyform down",
                    emit=functools.partial(progress.event, record.name, "destroy", None),
                )
                progress.stage(record.name, "down", "terminated")
    finally:
        db.close()
