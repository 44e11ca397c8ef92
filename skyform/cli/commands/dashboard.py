"""`skyform dashboard`: a read-only web UI over the state store (clusters, jobs, services,
plans, cost) on 127.0.0.1; actions only with --allow-actions."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("dashboard")(dashboard)


def dashboard(
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on; any but 127.0.0.1 needs the token."
    ),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="Port to listen on."),
    open_browser: bool = typer.Option(False, "--open", help="Open it in the browser."),
    allow_actions: bool = typer.Option(
        False, "--allow-actions", help="Allow cancel, down and autostop (each confirmed)."
    ),
) -> None:
    """Clusters, jobs, services, plans and cost in a browser (read-only by default)."""
    import os
    import sys

    from skyform.ops.dashboard.server import start

    def ready(url: str) -> None:
        typer.echo(f"skyform dashboard at {url}  (Ctrl-C stops it)")
        sys.stdout.flush()
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    token = os.environ.get("SKYFORM_DASHBOARD_TOKEN") or None
    start(host, port, allow_actions=allow_actions, token=token, ready=ready)
