"""`skyform ssh CLUSTER [--node N] [-- CMD ARGS...]`: a shell on a node, or one command."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    # Everything after the cluster name that skyform does not know is the command's.
    app.command("ssh", context_settings={"ignore_unknown_options": True})(ssh)


def ssh(
    cluster: str = typer.Argument(..., help="An existing cluster (see skyform status)."),
    command: list[str] = typer.Argument(
        None, metavar="[-- CMD ARGS...]", help="Run this instead of an interactive shell."
    ),
    node: int | None = typer.Option(None, "--node", "-n", help="Node rank (default: 0, the head)."),
) -> int:
    """Open a shell on a cluster's node (as `ssh CLUSTER` after `sky launch` does), or run
    CMD there and exit with its exit code."""
    import sys

    from skyform.ops.ssh import ssh as log_in

    return log_in(cluster, node, list(command or []), tty=sys.stdin.isatty())
