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
    from skyform.config import load_config
    from skyform.plan.planfile import plan_digest, read_plan
    from skyform.stacks.pulumi.export import export_plan

    plan, data = read_plan(plan_file)
    result = export_plan(plan, plan_digest(data), out, config=load_config())
    render_export(result, as_json=json_out)
