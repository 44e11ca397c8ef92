"""`skyform check`: which infra this machine can use right now."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("check")(check)


def check(
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Report which infra is usable: local, ssh pools, aws, gcp, kubernetes, pulumi CLI."""
    from skyform.cli.render.check import render_check
    from skyform.ops.check import check_all

    render_check(check_all(), as_json=json_out)
