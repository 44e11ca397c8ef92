"""`skyform force-unlock CLUSTER`: free a cluster's lock whose holder is gone, as
`terraform force-unlock` does. Asks first (only `yes` approves; `-y` in scripts)."""

from __future__ import annotations

import typer

from skyform.cli import options


def register(app: typer.Typer) -> None:
    app.command("force-unlock")(force_unlock)


def force_unlock(
    cluster: str = typer.Argument(..., help="The locked cluster."),
    yes: bool = options.YES,
) -> None:
    """Free a cluster's lock. Locks free themselves when their holder dies (at once on the
    same machine, at lease expiry elsewhere); use this only when the holder is known to be
    gone and waiting is not an option."""
    from skyform.cli.prompts import confirm
    from skyform.ops.state_admin import cluster_lock
    from skyform.ops.state_admin import force_unlock as free_lock

    lease = cluster_lock(cluster)
    if lease is None:
        typer.echo(f"Cluster {cluster!r} is not locked: nothing to do.")
        return
    confirm(
        f"Free the lock on cluster {cluster!r} held by {lease.describe()}? If that "
        "command still runs, two commands may then change the cluster at once.",
        yes,
    )
    free_lock(cluster)
    typer.echo(f"Cluster {cluster!r} is unlocked (it was held by {lease.describe()}).")
