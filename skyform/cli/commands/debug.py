"""`skyform debug preempt CLUSTER [--node N]`: rehearse a spot reclaim on local/ssh nodes."""

from __future__ import annotations

import typer

from skyform.cli.groups import verb_group

debug_app, register = verb_group("debug", "Fault injection for rehearsing recovery.")


@debug_app.command("preempt")
def preempt(
    cluster: str = typer.Argument(..., help="A local or ssh-pool cluster."),
    node: int | None = typer.Option(None, "--node", "-n", help="Only this node (rank)."),
) -> None:
    """Kill a node's jobs and mark it preempted, the way a spot reclaim takes a node away."""
    from skyform.cli.render.progress import ConsoleProgress
    from skyform.ops.preempt import preempt_cluster

    progress = ConsoleProgress()
    count = preempt_cluster(
        cluster, rank=node, emit=lambda m: progress.event(cluster, "preempt", None, m)
    )
    progress.stage(cluster, "preempted", f"{count} node(s)")
