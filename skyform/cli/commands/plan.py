"""`skyform plan TASK.yaml [-o plan.json]`: choose placements, diff against state, save the plan."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from skyform.cli import options
from skyform.cli.options import Minimize


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)


@options.launch_flags
def plan(
    task_file: Path = typer.Argument(..., help="Task YAML (SkyPilot format; may be a pipeline)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Save the plan to this file."),
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
    overrides=None,
) -> int:
    """Plan placements for a task: the cheapest (or fastest) offers, as a Terraform-style diff."""
    from skyform.cli.plan_check import check_committed, policy_error
    from skyform.cli.render.messages import print_warnings
    from skyform.cli.render.plan_output import emit_plan
    from skyform.errors import SkyformError
    from skyform.ops import planfiles
    from skyform.ops.plan import plan_task

    if json_out and markdown:
        raise SkyformError("--json and --markdown are exclusive: pick one output format")
    if check is not None and (out is not None or markdown):
        raise SkyformError("--check compares and writes nothing: drop -o/--markdown")
    options.require_cost_limit("--max-hourly-cost", max_hourly_cost)
    options.require_cost_limit("--max-total-cost", max_total_cost)
    if out is not None:
        options.refuse_overwriting_input(out, task_file)
    result = plan_task(
        task_file,
        out=out if check is None else check,
        objective=minimize.value,
        cluster=cluster,
        destroy=destroy,
        inputs=options.task_inputs(env, env_file, secret, overrides),
    )
    print_warnings(result.warnings)
    refused = policy_error(result.plan, max_hourly_cost, max_total_cost)
    if check is not None:
        return check_committed(
            result.plan,
            check,
            task_file=task_file,
            cluster=cluster,
            as_json=json_out,
            refused=refused,
        )
    if out is not None and refused is None:
        planfiles.save(result.plan, out)
    saved = os.path.relpath(out) if out is not None and refused is None else None
    emit_plan(result.plan, as_json=json_out, markdown=markdown, saved_to=saved)
    if refused is not None:
        raise refused
    return 2 if detailed_exitcode and result.plan.summary.has_changes else 0
