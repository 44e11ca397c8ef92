"""`skyform status`: the clusters skyform manages."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

import typer

from skyform.cli import options


def register(app: typer.Typer) -> None:
    app.command("status")(status)


def status(
    clusters: list[str] = typer.Argument(None, help="Only these clusters."),
    all_users: bool = typer.Option(
        False,
        "--all-users",
        "-u",
        "-a",
        help="Every user's clusters, as in SkyPilot. This state is yours alone, so it lists "
        "what plain status lists.",
    ),
    ip: bool = typer.Option(
        False, "--ip", help="Print only the head node's address of the (one) cluster."
    ),
    endpoints: bool = typer.Option(
        False, "--endpoints", help="Print only the cluster's endpoints: PORT: HOST:PORT."
    ),
    endpoint: int | None = typer.Option(
        None, "--endpoint", help="Print only the HOST:PORT that serves this port.", min=1
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
    if ip or endpoints or endpoint is not None:
        _addresses(list(clusters or []), ip=ip, port=endpoint, refresh=refresh)
        return
    from skyform.ops.clusters import has_state

    if not has_state():  # a fresh machine: answer without loading models or rich
        from skyform.cli.render.empty import render_no_clusters

        render_no_clusters(as_json=json_out)
        return
    with _collector_paused():
        _status(list(clusters or []), verbose=verbose, refresh=refresh, json_out=json_out)


def _addresses(clusters: list[str], *, ip: bool, port: int | None, refresh: bool) -> None:
    """`sky status --ip C` / `--endpoints C` / `--endpoint PORT C`: one plain line each."""
    from skyform.errors import SkyformError
    from skyform.ops.endpoints import endpoints, head_ip

    if refresh:
        raise SkyformError(
            "--ip and --endpoint(s) do not go with --refresh",
            "Refresh first (skyform status --refresh), then ask for the address.",
        )
    if ip:
        typer.echo(head_ip(clusters))
        return
    found = endpoints(clusters, port)
    for number, address in found.items():
        typer.echo(address if port is not None else f"{number}: {address}")


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while the records are read and drawn: it would only
    rescan the rows being built, over and over (0.1-0.2 s of `status` at 10,000 clusters).
    Reference counting still frees what the command drops."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _status(clusters: list[str], *, verbose: bool, refresh: bool, json_out: bool) -> None:
    if not (clusters or verbose or refresh or json_out):
        from skyform.ops.clusters import plain_status

        rows = plain_status()
        if rows is not None:  # no record needs the models: printed without them (or rich)
            from skyform.cli.render.status_table import render_rows

            render_rows(rows)
            return
    from skyform.cli.render.clusters import render_status
    from skyform.ops.clusters import cluster_status

    # the table alone shows no jobs: they are read only when shown
    view = cluster_status(clusters, refresh=refresh, with_jobs=verbose or json_out)
    render_status(
        view.records,
        view.jobs,
        view.health,
        verbose=verbose,
        as_json=json_out,
        notes=view.notes,
        refreshed=refresh,
    )
