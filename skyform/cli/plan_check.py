"""`skyform plan TASK --check PLAN` and the cost policy options of `skyform plan`.

--check: exit 0 when PLAN holds exactly the bytes planning writes now (for the same output
path), 2 when not — with why (task, catalog, config or state changed) and what would change
(placements, actions, costs). It never writes a file.
--max-hourly-cost / --max-total-cost: a plan above a limit is refused with exit 1 and a message
naming the clusters and figures; `plan -o` then writes nothing. With --check the limits apply
to what planning makes now, and a violation (exit 1) outranks an out-of-date plan (exit 2).
"""

from __future__ import annotations

from pathlib import Path

from skyform.errors import PlanError
from skyform.plan.model import Plan

OUT_OF_DATE = 2


def policy_error(plan: Plan, max_hourly: float | None, max_total: float | None) -> PlanError | None:
    if max_hourly is None and max_total is None:
        return None
    from skyform.cli.render.cost_diff import policy_message
    from skyform.cost.policy import policy_violations

    violations = policy_violations(plan, max_hourly=max_hourly, max_total=max_total)
    if not violations:
        return None
    return PlanError(
        policy_message(violations),
        "Choose cheaper resources (use_spot, another accelerator, fewer nodes or hours), or "
        "raise the limit if the cost is intended.",
    )


def replan_command(plan_path: Path, task_file: Path, plan: Plan, cluster: str | None) -> str:
    from skyform.plan.replan import replan_command as command

    return command(plan, plan_path, task_file, cluster)


def check_committed(
    fresh: Plan,
    plan_path: Path,
    *,
    task_file: Path,
    cluster: str | None,
    as_json: bool,
    refused: PlanError | None,
) -> int:
    from skyform.cost.compare import check_plan
    from skyform.ops.planfiles import as_of_committed
    from skyform.plan.planfile import plan_bytes, read_plan
    from skyform.plan.replan import shell_path

    committed, data = read_plan(plan_path)
    fresh = as_of_committed(committed, fresh)
    label = shell_path(plan_path)
    check = check_plan(committed, data, fresh, plan_bytes(fresh), label=label)
    if as_json:
        from skyform.cli.render.output import print_json

        print_json(check.model_dump(mode="json"))
    else:
        from skyform.cli.render.console import make_console
        from skyform.cli.render.cost_diff import render_plan_check

        replan = replan_command(plan_path, task_file, fresh, cluster)
        render_plan_check(check, make_console(), plan_path=label, replan=replan)
    if refused is not None:
        raise refused
    return 0 if check.up_to_date else OUT_OF_DATE
