"""What `skyform plan` does once its options are read: by the Typer command
(cli/commands/plan.py) or, for the plain spellings, by the fast path before Typer is
imported (cli/fastpath.py). Typer-free."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skyform.plan.model import Objective
    from skyform.spec.inputs import TaskInputs


def run_plan(
    task_file: Path,
    *,
    out: str | None,
    objective: Objective,
    cluster: str | None,
    destroy: bool,
    detailed_exitcode: bool,
    inputs: TaskInputs,
    json_out: bool,
    markdown: bool,
    check: Path | None,
    max_hourly_cost: float | None,
    max_total_cost: float | None,
    preview: bool = False,
) -> int:
    """Plan placements for a task, print the plan and save it; the exit code. `preview`:
    with the engine's own preview of each cluster (never saved with the plan)."""
    from skyform.cli.plain_options import refuse_overwriting_input, require_cost_limit
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
    if check is not None and preview:
        raise SkyformError(
            "--check compares the plan with PLAN; --preview shows the engine's preview of a "
            "plan: pick one"
        )
    require_cost_limit("--max-hourly-cost", max_hourly_cost)
    require_cost_limit("--max-total-cost", max_total_cost)
    out_path = None
    if out is not None:  # as typed: `-o dir/` keeps the slash that says it is a directory
        planfiles.check_output(out)  # `-o .`, `-o /dev/null`: refused before planning
        out_path = Path(out)
        refuse_overwriting_input(out_path, task_file)
    # a plan records secrets by name: CI plans a pull request without their values
    inputs = dataclasses.replace(inputs, secrets_by_name=True)
    result = plan_task(
        task_file,
        out=out_path if check is None else check,
        objective=objective,
        cluster=cluster,
        destroy=destroy,
        inputs=inputs,
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
    if out_path is not None and refused is None:
        planfiles.save(result.plan, out_path)
    saved = os.path.relpath(out_path) if out_path is not None and refused is None else None
    previews = None
    if preview and refused is None:
        from skyform.ops.preview import engine_previews

        previews = engine_previews(result.plan)
    emit_plan(result.plan, as_json=json_out, markdown=markdown, saved_to=saved, previews=previews)
    if refused is not None:
        raise refused
    return 2 if detailed_exitcode and result.plan.summary.has_changes else 0
