"""Plan revisions of a managed job: the launch plan, and one new plan per recovery.

A revision is an ordinary plan file (`skyform show`, `skyform cost diff` read it). A recovery
re-plans only the tasks not yet finished, with the relaunch step's blocked / allowed
placements, against current state — where the lost cluster is marked LOST, so its change is
a replacement whose reason says so, and `blocked` says what was avoided and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from skyform.digests import sha256
from skyform.ops.managed import jobdir
from skyform.paths import write_output
from skyform.plan.model import BlockedPlacement, Plan
from skyform.plan.planfile import plan_bytes
from skyform.spec import Dag
from skyform.stacks.registry import nodes_gone
from skyform.state.db import StateDB
from skyform.state.managed import ManagedJobRecord
from skyform.state.revisions import Revision, Revisions, job_owner
from skyform.state.snapshot import snapshot_of

# what made a managed job's revision: its launch, or a recovery (a re-plan after a
# preemption, a failure to place, a restart after a user failure)
Kind = Literal["launch", "recovery"]


def cluster_name(job_id: int, task_name: str) -> str:
    from skyform.plan.naming import sanitize_name

    return sanitize_name(f"j{job_id}-{task_name}")


def load_dag(record: ManagedJobRecord) -> Dag:
    """The job's task as launched (from the saved copy), with the launch-time overrides."""
    from skyform.spec import load_task_text
    from skyform.spec.inputs import TaskInputs
    from skyform.spec.overrides import ResourceOverrides

    inputs = jobdir.load_inputs(record.id)
    task_dir = Path(record.task_file).parent
    flags = ResourceOverrides.from_recorded(inputs["overrides"], task_dir)
    pinned = TaskInputs(
        envs=tuple(inputs["envs"]),
        secrets=tuple(inputs["secrets"]),
        resources=flags,
        environ={},
        base_dir=inputs["base_dir"],
    )
    return load_task_text(
        jobdir.saved_task(record.id).decode(), path_label=record.task_file, inputs=pinned
    )


def sub_dag(dag: Dag, keep: Sequence[int]) -> Dag:
    """The tasks in `keep` (in order) with the edges among them, renumbered."""
    index = {old: new for new, old in enumerate(keep)}
    edges = [(index[u], index[v]) for u, v in dag.edges if u in index and v in index]
    return Dag(
        name=dag.name,
        execution=dag.execution,
        primary_tasks=dag.primary_tasks,
        termination_delay=dag.termination_delay,
        tasks=[dag.tasks[i] for i in keep],
        edges=edges,
        warnings=dag.warnings,
        overrides=dag.overrides,
    )


@dataclass(frozen=True)
class NewRevision:
    plan: Plan
    revision: Revision
    path: Path


def make_revision(
    db: StateDB,
    record: ManagedJobRecord,
    *,
    tasks: Sequence[int],
    kind: Kind,
    reason: str,
    blocked: Sequence[BlockedPlacement] = (),
    allowed: Sequence[BlockedPlacement] = (),
) -> NewRevision:
    """Plan `tasks` of the job (indexes into the launched DAG) and save it as the next
    revision. Raises NoOffersError when the blocks leave nothing to place a task on."""
    from skyform.config import load_config
    from skyform.ops.check import unusable_here
    from skyform.ops.plan import plan_dag

    dag = sub_dag(load_dag(record), tasks)
    config = load_config()
    plan = plan_dag(
        dag,
        snapshot_of(db, nodes_gone),
        task_path=record.task_file,
        file_digest=sha256(jobdir.saved_task(record.id)),
        objective=record.objective,  # type: ignore[arg-type]
        config=config,
        cluster_names=[record.task(i).cluster for i in tasks],
        # placed only where this machine can make nodes, as a launch is
        blocked=(*blocked, *unusable_here(dag, config)),
        allowed=tuple(allowed),
    )
    data = plan_bytes(plan)
    revision = Revisions(db).add(
        job_owner(record.id),
        kind=kind,
        reason=reason,
        body=data,
        path_of=lambda number: str(jobdir.revision_path(record.id, number)),
    )
    assert revision.path is not None  # path_of named it
    path = Path(revision.path)
    write_output(path, data, "the plan")  # `skyform show` and `cost diff` read it there
    return NewRevision(plan=plan, revision=revision, path=path)
