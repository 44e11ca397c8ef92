"""`skyform plan TASK.yaml [-o plan.json]`: choose placements, diff against state, save the plan."""

from __future__ import annotations

from pathlib import Path

import typer

from skyform.cli import options
from skyform.cli.options import Minimize


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)


@options.launch_flags
def plan(
    task_file: Path = typer.Argument(..., help="Task YAML (SkyPilot format; may be a pipeline)."),
    out: str | None = typer.Option(
        None, "--out", "-o", metavar="PATH", help="Save the plan to this file."
    ),
    minimize: Minimize = options.MINIMIZE,
    cluster: str | None = typer.Option(
        None, "--cluster", "-c", help="Cluster name (prefix for pipelines)."
    ),
    destroy: bool = typer.Option(
        False, "--destroy", help="Plan to destroy this task's clusters (like terraform -destroy)."
    ),
    detailed_exitcode: bool = typer.Option(
        False, "--detailed-exitcode", help="Exit 2 when the plan has changes, 0 when none."
    ),
    env: list[str] = options.ENV,
    env_file: list[Path] = options.ENV_FILE,
    secret: list[str] = options.SECRET,
    json_out: bool = options.JSON,
    markdown: bool = options.MARKDOWN,
    check: Path | None = typer.Option(
        None,
        "--check",
        metavar="PLAN",
        help="Exit 0 if PLAN is exactly what planning writes now, else 2 and why. Writes nothing.",
    ),
    max_hourly_cost: float | None = typer.Option(
        None, "--max-hourly-cost", metavar="USD", min=0, help="Fail (exit 1) above USD per hour."
    ),
    max_total_cost: float | None = typer.Option(
        None, "--max-total-cost", metavar="USD", min=0, help="Fail (exit 1) above USD estimated."
    ),
    preview: bool = typer.Option(
        False,
        "--preview",
        help="Add the engine's own preview per cloud cluster (resources to create, update, "
        "replace, delete). Shown only: never saved with the plan.",
    ),
    overrides=None,
) -> int:
    """Plan placements for a task: the cheapest (or fastest) offers, as a Terraform-style diff."""
    from skyform.cli.plan_run import run_plan

    return run_plan(
        task_file,
        out=out,
        objective=minimize.value,
        cluster=cluster,
        destroy=destroy,
        detailed_exitcode=detailed_exitcode,
        inputs=options.task_inputs(env, env_file, secret, overrides),
        json_out=json_out,
        markdown=markdown,
        check=check,
        max_hourly_cost=max_hourly_cost,
        max_total_cost=max_total_cost,
        preview=preview,
    )
