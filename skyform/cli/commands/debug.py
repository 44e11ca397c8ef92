"""`skyform debug preempt CLUSTER [--node N]`: rehearse a spot reclaim on local/ssh nodes."""

from __future__ import annotations

import typer

debug_app = typer.Typer(help="Fault injection for rehearsing recovery.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(debug_app, name="debug")


@debug_app.command("preempt")
def preempt(
    cluster: str = typer.Argument(..., help="A local or ssh-pool cluster."),
    node: int | None = typer.Option(None, "--node", "-n", help="Only this node (rank)."),
) -> None:
    """Kill a node's jobs and mark it preempted, the way a spot reclaim takes a node away."""
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.ops.preempt import preempt as do_preempt
    from skyform.state.db import open_state

    progress = ConsoleProgress()
    with open_state() as db:
        count = do_preempt(
            db,
            cluster,
            rank=node,
            emit=lambda m: progress.event(cluster, "preempt", None, m),
        )
    progress.stage(cluster, "preempted", f"{count} node(s)")
