"""The use case behind `apply` and `launch`: carry out a plan against this machine's state.

`apply` runs only what the plan changes (Terraform's semantics); `launch` also runs the job
again on clusters the plan leaves as they are (`sky launch`'s), and exits as `sky launch`
does: with the job's outcome as SkyPilot's JobExitCode.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from skyform.errors import PlanError
from skyform.ops.applier import Applier, ApplyOptions, ApplyProgress, ClusterOutcome
from skyform.ops.taskfile import check_jobs_match_task
from skyform.plan.model import Action, ClusterChange, Plan
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
    from skyform.state.db import open_state

    config, catalog = refuse_before_anything(plan, plan_path, options)
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


def refuse_before_anything(plan: Plan, plan_path: Path, options: ApplyOptions):
    """Every refusal apply can make before state, a lock or a directory exists: a job the
    task file does not make, a secret without a value, a stale plan. (config, catalog)."""
    from skyform.config import load_config
    from skyform.plan.catalog import load_catalog

    check_jobs_match_task(
        plan, plan_path, secret_overrides=options.secret_overrides, environ=options.environ
    )
    config = load_config()
    catalog = load_catalog(config)
    refuse_stale_early(plan, plan_path, catalog)
    refuse_offers_not_in(plan, plan_path, catalog)
    return config, catalog


def refuse_offers_not_in(plan: Plan, plan_path: Path, catalog) -> None:
    """Every offer a fresh plan shows (the chosen ones and the alternatives) is one of the
    catalog it was priced from — the same catalog now (else it is stale) — with the same
    price and shape: a plan edited to show a cheaper price, or another machine under the
    price of the one it names, is refused. Kubernetes offers are read from the clusters,
    not a catalog (a change there makes the plan stale instead)."""
    from skyform.cost.estimate import catalog_offer, find_offer
    from skyform.plan.planjson import corrupt
    from skyform.plan.specs import placed

    for i, t in enumerate(plan.tasks):
        shown = [(f"tasks.{i}.offer", t.offer)]
        shown += [
            (f"tasks.{i}.alternatives.{k}.offer", a.offer) for k, a in enumerate(t.alternatives)
        ]
        for where, offer in shown:
            if offer.cloud == "kubernetes":
                continue
            now = find_offer(catalog, catalog_offer(offer))
            if now is None or placed(now) != offer:
                raise corrupt(
                    str(plan_path),
                    "not an offer of the catalog the plan was priced from (its price, shape "
                    "or name was edited)",
                    where,
                )


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


def replacements(plan: Plan, allowed: Collection[str], *, verb: str) -> list[ClusterChange]:
    """The clusters a plan made now by `launch` or `apply TASK` destroys (`-/+` replace, `-`
    destroy). Each must be named with `--replace` (the CLI then asks on a terminal), else the
    plan is refused and nothing changes: as SkyPilot's `sky launch`, which never deletes a
    cluster but refuses resources it does not have. (A saved plan was reviewed as it is.)"""
    found = [c for c in plan.changes if c.action in (Action.REPLACE, Action.DELETE)]
    refused = [c for c in found if c.cluster not in allowed]
    if not refused:
        return found
    names = " ".join(f"--replace {c.cluster}" for c in refused)
    raise PlanError(
        f"{verb} would destroy {destroyed(refused)}: everything on its nodes is lost (files, "
        "running jobs); nothing was changed",
        f"To replace it, run again with {names} (on a terminal you are asked to confirm; -y "
        "alone never replaces). To keep it, use another cluster name (-c NEW_NAME), or take "
        f"it down yourself (skyform down {refused[0].cluster}) and {verb} again.",
    )


def destroyed(changes: list[ClusterChange]) -> str:
    """`cluster a and make it again (why); cluster b (why)`: what the changes destroy."""
    return "; ".join(
        f"cluster {c.cluster}"
        + (" and make it again" if c.action is Action.REPLACE else "")
        + f" ({c.reason})"
        for c in changes
    )


def launch_exit_code(outcomes: list[ClusterOutcome]) -> int:
    """0 when every job succeeded (or was submitted with --detach), else the first job's
    JobExitCode that did not: 100 failed (run or setup), 103 cancelled."""
    for outcome in outcomes:
        if outcome.job is not None and outcome.job.status.is_terminal:
            code = outcome.job.status.exit_code
            if code != JobExitCode.SUCCEEDED:
                return code
    return JobExitCode.SUCCEEDED
