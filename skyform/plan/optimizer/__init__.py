"""The placement optimizer: which offer each task of a DAG runs on. Pure: no I/O, no printing
(CBC runs as a subprocess on temporary files, hidden inside `lp.py`).

    from skyform.plan.optimizer import optimize
    solution = optimize(dag, catalog, objective="cost", blocked=plan_blocked, clouds=PRICED)

Objectives. `cost` = compute (hourly price × nodes × estimated hours) + egress USD. `time` =
makespan in hours: a task lasts (pulling its anchored inputs) + (estimated hours) and starts when
every parent has finished and its outputs have arrived (GB·8/10 Gbps between different places).
The other objective breaks ties: the optimum is lexicographic (cost, then makespan; or makespan,
then cost). With independent parts of the DAG (no edges between them), the `time` objective only
asks each part to finish by the overall makespan and then minimises its cost; likewise under
`cost`, a part that is not the last to finish only has to finish by the overall makespan.

Total order (deterministic tie-breaking). Among assignments equal in both objectives (within a
relative 1e-9), the answer is the smallest one when tasks are read in topological order (Kahn,
lowest task index first among ready tasks) and each task's candidates are ranked by:

    1. its own contribution to the primary objective (cost: compute + anchored-input egress USD;
       time: anchored-input transfer hours + run hours),
    2. its own contribution to the secondary objective,
    3. hourly price, cloud, region, zone, instance type, spot (as `row_sort_key` in
       plan/catalog/offer.py), then accelerator, count, context,
    4. num_nodes, hours, resource group, request index, position in the input.

So each task, in topological order, takes the first candidate in that order that still allows an
optimal assignment of the rest. The chain DP does exactly this; after the ILP, every task is moved
in turn to its earliest candidate that keeps both objective values (see canonical.py); small
components are enumerated in that order. Pruning (prune.py) never removes the canonical answer.

How: candidates.py turns each task's first feasible resource group into candidates (the
cheapest offer per place, accelerator and spot); prune.py drops what can never be canonical
(per place, twin places of a region, dominated candidates); solve.py splits the DAG into
independent parts and solves each with dp.py (chains), brute.py (small parts) or ilp.py +
canonical.py (CBC); nearest.py explains a task nothing fits.

Public API: `optimize`, `problem_for`, `solve`, `brute_force` (tests), `Problem`, `Task`,
`Candidate`, `Edge`, `Anchor`, `Solution`, `TaskResult`, `Flow`, `Nearest`, `describe_request`,
`describe_requests`, `describe_offer`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from skyform.plan.optimizer.brute import brute_force
from skyform.plan.optimizer.candidates import build_problem, default_clouds, task_candidates
from skyform.plan.optimizer.nearest import (
    Nearest,
    describe_offer,
    describe_request,
    describe_requests,
    no_offers_error,
)
from skyform.plan.optimizer.problem import (
    Anchor,
    Candidate,
    Edge,
    Flow,
    Objective,
    Problem,
    Solution,
    Task,
    TaskResult,
)
from skyform.plan.optimizer.solve import solve

if TYPE_CHECKING:
    from skyform.plan.catalog import Catalog
    from skyform.plan.model import BlockedPlacement
    from skyform.spec import Dag

__all__ = [
    "Anchor",
    "Candidate",
    "Edge",
    "Flow",
    "Nearest",
    "Objective",
    "Problem",
    "Solution",
    "Task",
    "TaskResult",
    "brute_force",
    "describe_offer",
    "describe_request",
    "describe_requests",
    "optimize",
    "problem_for",
    "solve",
]


def problem_for(
    dag: Dag,
    catalog: Catalog,
    *,
    objective: Objective = "cost",
    blocked: Sequence[BlockedPlacement] = (),
    clouds: Iterable[str] | None = None,
    busy: Collection[str] = (),
    anchors: Sequence[Anchor] = (),
) -> Problem:
    """The optimizer's Problem for a DAG; raises NoOffersError for a task nothing fits.
    `anchors`: data at fixed places besides the tasks' `inputs` (buckets read at plan time)."""
    chosen = default_clouds(catalog, clouds)
    candidates = []
    memo: dict = {}
    for v, task in enumerate(dag.tasks):
        found = task_candidates(task, catalog, chosen, blocked, memo, busy)
        if not found:
            raise no_offers_error(task, v, catalog, chosen, blocked)
        candidates.append(found)
    return build_problem(dag, catalog, candidates, objective, anchors)


def optimize(
    dag: Dag,
    catalog: Catalog,
    *,
    objective: Objective = "cost",
    blocked: Sequence[BlockedPlacement] = (),
    clouds: Iterable[str] | None = None,
    allowed: Sequence[BlockedPlacement] = (),
    busy: Collection[str] = (),
    anchors: Sequence[Anchor] = (),
) -> Solution:
    """Place every task of `dag`. `clouds`: clouds for requests that name none (default: the
    catalog's priced clouds). `blocked`: placements never chosen; `allowed` (when given): only
    offers matching one of these; `busy`: ssh hosts other clusters hold. Raises NoOffersError
    (exit 4) when a task has no feasible offer."""
    rules: list = list(blocked)
    if allowed:
        from skyform.plan.model import OutsideOf

        rules.append(OutsideOf(allowed=list(allowed)))
    problem = problem_for(
        dag, catalog, objective=objective, blocked=rules, clouds=clouds, busy=busy, anchors=anchors
    )
    return solve(problem)
