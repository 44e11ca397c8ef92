"""`skyform known-hosts forget HOST:PORT`: drop a node's recorded SSH host key.

skyform records each node's host key on first contact and refuses a changed one. When a node
was really rebuilt, forgetting its old key lets the next contact record the new one.
"""

from __future__ import annotations

import typer

known_hosts_app = typer.Typer(help="skyform's record of node SSH host keys.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(known_hosts_app, name="known-hosts")


@known_hosts_app.command("forget")
def forget(target: str = typer.Argument(..., help="HOST:PORT (or HOST for port 22).")) -> None:
    """Forget the host key recorded for HOST:PORT."""
    from skyform.cli.render.console import make_console
    from skyform.exec.hostkeys import KnownHosts, parse_target

    host, port = parse_target(target)
    removed = KnownHosts().forget(host, port)
    make_console().print(
        f"Forgot {removed} key(s) for {host}:{port}."
        if removed
        else f"No key recorded for {host}:{port}."
    )
