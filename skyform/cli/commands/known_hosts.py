"""`skyform known-hosts forget HOST:PORT`: drop a node's recorded SSH host key.

skyform records each node's host key on first contact and refuses a changed one. When a node
was really rebuilt, forgetting its old key lets the next contact record the new one.
"""

from __future__ import annotations

import typer

from skyform.cli.groups import verb_group

known_hosts_app, register = verb_group("known-hosts", "skyform's record of node SSH host keys.")


@known_hosts_app.command("forget")
def forget(target: str = typer.Argument(..., help="HOST:PORT (or HOST for port 22).")) -> None:
    """Forget the host key recorded for HOST:PORT."""
    from skyform.cli.render.console import make_console
    from skyform.ops.ssh import forget_host_key

    host, port, removed = forget_host_key(target)
    make_console().print(
        f"Forgot {removed} key(s) for {host}:{port}."
        if removed
        else f"No key recorded for {host}:{port}."
    )
