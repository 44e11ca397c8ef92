"""What `apply` refuses about a plan as a whole, before it locks or changes anything."""

from __future__ import annotations

import shlex

from skyform.errors import PlanError
from skyform.plan.model import Action, Plan
from skyform.plan.ownership import Owner, Relation, describe_owner, relation
from skyform.state.db import StateDB


def refuse_unrunnable(plan: Plan, *, detach: bool) -> bool:
    """Refuse a plan `apply` cannot run as asked; True when its tasks wait for each other
    (a pipeline, followed in order)."""
    if plan.task.execution == "parallel" and len(plan.tasks) > 1 and not plan.destroy:
        raise PlanError(
            f"{plan.task.path} is a job group (execution: parallel): it runs only as a managed job",
            f"Run it with: skyform jobs launch {shlex.quote(plan.task.path)}",
        )
    multi = len(plan.tasks) > 1 and any(t.depends_on for t in plan.tasks)
    if detach and multi:
        raise PlanError(
            "--detach cannot run a pipeline whose tasks wait for each other",
            "Run apply without --detach (it follows the tasks in order), or use "
            "`skyform jobs launch` to run the pipeline in the background.",
        )
    return multi


def refuse_takeover(plan: Plan, db: StateDB, owner: Owner, *, take_over: bool) -> None:
    """Refuse, before anything changes, to act on a cluster that is not this task file's
    unless told to (`--take-over`). Checked against state here, not only trusted from the
    plan, so a plan made elsewhere cannot slip a takeover through."""
    from skyform.state.managed import ManagedJobs

    jobs = ManagedJobs(db)
    foreign = []
    for change in plan.changes:
        record = db.get_cluster(change.cluster)
        if record is None or change.action is Action.NOOP:
            continue
        managed = jobs.owner_of(change.cluster)
        managed_id = managed.id if managed is not None else None
        if relation(record.source, managed_id, owner) is Relation.OTHER:
            foreign.append(f"{change.cluster} ({describe_owner(record.source, managed_id)})")
    if foreign and not take_over:
        raise PlanError(
            "this plan takes over cluster(s) that another task file or a managed job made: "
            + ", ".join(foreign),
            "Pick another name (-c NAME) if they are not the same thing; to take them over "
            "on purpose, run apply again with --take-over.",
        )
