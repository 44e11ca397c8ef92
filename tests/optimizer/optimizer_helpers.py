"""Helpers for the optimizer tests: task YAML in, and seeded random problems for
cross-checking the solvers against brute force (prices, hours and egress rates are small
integers, so sums are exact and ties — the hard part of deterministic tie-breaking — frequent).
"""

from __future__ import annotations

import random

from skyform.plan.catalog.egress import Transfer
from skyform.plan.catalog.offer import Location, Offer
from skyform.plan.optimizer import Anchor, Candidate, Edge, Problem, Task
from skyform.spec import Dag, load_task_text

PLACES = [
    Location("x", "r1", "r1a"),
    Location("x", "r1", "r1b"),
    Location("x", "r2", "r2a"),
    Location("x", "r2", "r2b"),
    Location("y", "r3", "r3a"),
    Location("y", "r3", "r3b"),
]


def hierarchical_egress(a: Location, b: Location, gb: float) -> Transfer:
    """Like the catalog's: free in place, then zone < region < cloud; one transfer speed."""
    if a == b:
        return Transfer(0.0, 0.0)
    if a.cloud != b.cloud:
        rate = 3.0
    elif a.region != b.region:
        rate = 2.0
    else:
        rate = 1.0
    return Transfer(rate * gb, 3600.0 * gb)


def matrix_egress(rng: random.Random):
    """Arbitrary per-pair prices and times (not hierarchical: the ILP's general form)."""
    table = {}
    for a in PLACES:
        for b in PLACES:
            table[(a, b)] = (0, 0) if a == b else (rng.randint(0, 3), rng.randint(0, 2))

    def egress(a: Location, b: Location, gb: float) -> Transfer:
        usd, hours = table[(a, b)]
        return Transfer(usd * gb, hours * 3600.0 * gb)

    return egress


def random_problem(
    seed: int,
    *,
    chain: bool = False,
    objective: str | None = None,
    hierarchical: bool | None = None,
    max_tasks: int = 5,
    max_candidates: int = 5,
) -> Problem:
    rng = random.Random(seed)
    n = rng.randint(1, max_tasks)
    tasks = []
    for v in range(n):
        cands = []
        for _ in range(rng.randint(1, max_candidates)):
            where = rng.choice(PLACES)
            offer = Offer(
                cloud=where.cloud,
                region=where.region or "",
                zone=where.zone,
                instance_type=f"type-{rng.randint(0, 2)}",
                spot=rng.random() < 0.3,
                hourly_price=float(rng.randint(1, 6)),
            )
            cands.append(Candidate(offer, rng.randint(1, 2), float(rng.randint(1, 3))))
        tasks.append(Task(f"t{v}", tuple(cands)))
    sizes = [0.0, 0.0, 1.0, 2.0, 5.0]
    if chain:
        edges = [Edge(v, v + 1, rng.choice(sizes)) for v in range(n - 1)]
    else:
        edges = [
            Edge(u, v, rng.choice(sizes))
            for v in range(1, n)
            for u in range(v)
            if rng.random() < 0.4
        ]
    anchors = []
    if rng.random() < 0.5:
        anchors.append(Anchor(rng.randrange(n), rng.choice(PLACES), float(rng.randint(1, 4))))
    if hierarchical is None:
        hierarchical = rng.random() < 0.5
    egress = hierarchical_egress if hierarchical else matrix_egress(rng)
    objective = objective or rng.choice(["cost", "time"])
    # a hierarchical egress is priced by region, as the catalog's: say so, as build_problem does
    shape = (tuple(tasks), tuple(edges), tuple(anchors), objective, egress, hierarchical)
    return Problem(*shape)  # type: ignore[arg-type]


def dag_of(text: str, path: str = "task.yaml") -> Dag:
    return load_task_text(text, path_label=path)


def with_inputs_at(dag: Dag, index: int, location: str) -> Dag:
    """Set a task's inputs location directly (task YAML only accepts real cloud names, and the
    fixture clouds are fictional)."""
    tasks = list(dag.tasks)
    task = tasks[index]
    ext = task.skyform.model_copy(update={"inputs_location": location})
    tasks[index] = task.model_copy(update={"skyform": ext})
    return dag.model_copy(update={"tasks": tasks})
