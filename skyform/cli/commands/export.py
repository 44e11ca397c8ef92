"""`skyform export PLAN.json -o DIR`: each cloud cluster of a plan as a plain Pulumi project."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    app.command("export")(export)


def export(
    plan_file: Path = typer.Argument(..., help="A plan written by `skyform plan -o`."),
    out: Path = typer.Option(
        ..., "-o", "--out", help="Directory to write the projects to (one per cluster)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
) -> None:
    """Write each aws/gcp/kubernetes cluster of a plan as a Pulumi project (`pulumi up` runs it
    without skyform): Pulumi.yaml, Pulumi.<stack>.yaml, __main__.py, requirements.txt."""
    from skyform.cli.render.export import render_export
    from skyform.ops.export import export as export_projects

    render_export(export_projects(plan_file, out), as_json=json_out)
