"""The use case behind `apply` and `launch`: carry out a plan against this machine's state.

`apply` runs only what the plan changes (Terraform's semantics); `launch` also runs the job
again on clusters the plan leaves as they are (`sky launch`'s), and exits as `sky launch`
does: with the job's outcome as SkyPilot's JobExitCode.
"""

from __future__ import annotations

from pathlib import Path

from skyform.ops.applier import Applier, ApplyOptions, ApplyProgress, ClusterOutcome
from skyform.ops.taskfile import check_jobs_match_task
from skyform.plan.model import Plan
from skyform.plan.planfile import content_digest
from skyform.state.models import JobExitCode


def apply_plan(
    plan: Plan, plan_path: Path, *, progress: ApplyProgress, options: ApplyOptions
) -> list[ClusterOutcome]:
    """Apply `plan` (`plan_path`'s folder is where its task path starts). Returns one
    outcome per cluster the plan touches.

    Only the plan's canonical content counts, never the bytes of its file: two files that
    spell one plan differently act, price and tag alike, and the digest recorded in state
    and on cloud resources is the content digest the review posted (--expect-digest's)."""
    from skyform.config import load_config
    from skyform.plan.catalog import load_catalog
    from skyform.state.db import open_state

    # before state or locks exist: a refused plan leaves nothing behind
    check_jobs_match_task(
        plan, plan_path, secret_overrides=options.secret_overrides, environ=options.environ
    )
    config = load_config()
    catalog = load_catalog(config)
    refuse_stale_early(plan, plan_path, catalog)
    with open_state() as db:
        applier = Applier(
            plan,
            plan_path,
            content_digest(plan),
            db=db,
            config=config,
            catalog=catalog,
            progress=progress,
            options=options,
        )
        return applier.run()


def refuse_stale_early(plan: Plan, plan_path: Path, catalog) -> None:
    """Refuse a plan already known to be stale before anything is created (no state.db,
    no lock files). The check that counts is made again under the clusters' locks."""
    from skyform.lifecycle.freshness import check_fresh, task_must_exist
    from skyform.state.db import open_state, state_exists

    task_must_exist(plan, plan_path)
    if not state_exists():
        check_fresh(plan, plan_path, db=None, catalog=catalog)
        return
    with open_state() as db:
        check_fresh(plan, plan_path, db=db, catalog=catalog)


def launch_exit_code(outcomes: list[ClusterOutcome]) -> int:
    """0 when every job succeeded (or was submitted with --detach), else the first job's
    JobExitCode that did not: 100 failed (run or setup), 103 cancelled."""
    for outcome in outcomes:
        if outcome.job is not None and outcome.job.status.is_terminal:
            code = outcome.job.status.exit_code
            if code != JobExitCode.SUCCEEDED:
                return code
    return JobExitCode.SUCCEEDED
