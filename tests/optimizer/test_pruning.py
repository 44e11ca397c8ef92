"""The pruning rules on hand-made cases: what they drop, and what they must keep."""

from __future__ import annotations

import pytest
from optimizer_helpers import random_problem

from skyform.plan.catalog.egress import Transfer
from skyform.plan.catalog.offer import Location, Offer
from skyform.plan.optimizer import Candidate, Edge, Problem, Task, brute_force, solve
from skyform.plan.optimizer.bound import prune_bounded
from skyform.plan.optimizer.prepared import Prepared
from skyform.plan.optimizer.prune import prune_dominated, prune_places, prune_twin_places

A1, A2 = Location("c", "a", "a1"), Location("c", "a", "a2")
B1 = Location("c", "b", "b1")


def cand(where: Location, price: float, hours: float = 1.0, itype: str = "m") -> Candidate:
    return Candidate(
        Offer(where.cloud, where.region or "", where.zone, itype, False, price), 1, hours
    )


def egress(a: Location, b: Location, gb: float) -> Transfer:
    if a == b:
        return Transfer(0.0, 0.0)
    return Transfer((0.1 if a.region == b.region else 1.0) * gb, gb * 0.8)


def kept(prep: Prepared, v: int) -> list[str]:
    cands = prep.problem.tasks[v].candidates
    return [f"{cands[i].offer.zone}/{cands[i].offer.instance_type}" for i in prep.alive[v]]


def test_per_place_the_cheapest_wins_under_cost():
    task = Task("t", (cand(A1, 2.0, itype="x"), cand(A1, 1.0, itype="y"), cand(B1, 3.0)))
    prep = Prepared(Problem((task,)))
    prune_places(prep)
    assert kept(prep, 0) == ["a1/y", "b1/m"]


def test_per_place_the_time_objective_keeps_the_fast_and_the_cheap():
    fast, cheap = cand(A1, 4.0, 1.0, "fast"), cand(A1, 1.0, 2.0, "cheap")
    both_worse = cand(A1, 5.0, 3.0, "worse")
    prep = Prepared(Problem((Task("t", (fast, cheap, both_worse)),), objective="time"))
    prune_places(prep)
    assert kept(prep, 0) == ["a1/fast", "a1/cheap"]


def chain(first: tuple, second: tuple, gb: float = 1.0) -> Problem:
    return Problem((Task("u", first), Task("v", second)), (Edge(0, 1, gb),), egress=egress)


def test_a_zone_twin_with_the_same_prices_goes_away():
    problem = chain((cand(A1, 1.0), cand(A2, 1.0)), (cand(A1, 2.0), cand(A2, 2.0)))
    prep = Prepared(problem)
    assert prune_twin_places(prep, [0, 1]) == 2
    assert kept(prep, 0) == kept(prep, 1) == ["a1/m"]
    assert solve(problem).choice == brute_force(problem).choice


def test_a_zone_only_one_task_can_use_stays():
    problem = chain((cand(A1, 1.0), cand(A2, 1.0)), (cand(A2, 2.0), cand(B1, 1.0)))
    prep = Prepared(problem)
    prune_twin_places(prep, [0, 1])
    assert kept(prep, 0) == ["a1/m", "a2/m"]  # v can only use a2: u may need to follow it
    assert solve(problem).choice == brute_force(problem).choice


def test_a_cheaper_zone_dominates_a_dearer_one_but_not_the_reverse():
    problem = chain((cand(A1, 1.0), cand(A2, 1.5)), (cand(A1, 2.0), cand(A2, 2.0)))
    prep = Prepared(problem)
    prune_twin_places(prep, [0, 1])
    assert kept(prep, 0) == kept(prep, 1) == ["a1/m"]


@pytest.mark.parametrize(("gb", "survives"), [(0.1, False), (10.0, True)])
def test_a_far_dear_place_is_dominated_only_while_the_data_is_small(gb, survives):
    # v could run in region b for 1.50 more; moving gb GB there costs gb × 1.0 either way
    problem = chain((cand(A1, 1.0),), (cand(A1, 1.0), cand(B1, 2.5)), gb=gb)
    prep = Prepared(problem)
    prune_dominated(prep, [0, 1])
    assert ("b1/m" in kept(prep, 1)) is False  # 2.5 > 1.0 + any egress saving: never better
    problem = chain((cand(A1, 1.0), cand(B1, 1.0)), (cand(A1, 1.0), cand(B1, 1.5)), gb=gb)
    prep = Prepared(problem)
    prune_dominated(prep, [0, 1])
    assert ("b1/m" in kept(prep, 1)) is survives  # follows u to b when the data is big
    assert solve(problem).choice == brute_force(problem).choice


def test_cost_bounds_drop_what_no_cheap_assignment_can_hold():
    # u -> v with 10 GB: together at a1 costs $2; u at a2 pays $5 + cross-zone egress, v at b1
    # pays cross-region egress; v at a1 a hair dearer is a tie and stays.
    u = Task("u", (cand(A1, 1.0), cand(A2, 5.0)))
    v = Task("v", (cand(A1, 1.0), cand(A1, 1.0 + 1e-12, itype="tie"), cand(B1, 1.5)))
    problem = Problem((u, v), (Edge(0, 1, 10.0),), egress=egress)
    prep = Prepared(problem)
    assert prune_bounded(prep, [0, 1]) == 2
    assert kept(prep, 0) == ["a1/m"]
    assert kept(prep, 1) == ["a1/m", "a1/tie"]


def test_cost_bounds_never_drop_the_brute_force_answer():
    for seed in range(150):
        problem = random_problem(seed, objective="cost", max_tasks=6, max_candidates=6)
        prep = Prepared(problem)
        prune_bounded(prep, list(prep.order))
        expected = brute_force(problem).choice
        assert all(expected[v] in prep.alive[v] for v in range(prep.n)), seed
