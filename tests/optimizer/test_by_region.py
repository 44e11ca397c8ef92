"""Egress priced by region (`Problem.egress_by_region`, set for the catalog's EgressTable): twin
pruning and the ILP read one pair of places per pair of regions instead of every pair of
places — which is what keeps a 20-task DAG fast on a catalog with 30 regions per cloud. The
answers must be exactly those of the general path."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from optimizer_helpers import random_problem

from skyform.plan.optimizer import brute_force, problem_for, solve
from skyform.plan.optimizer.bound import prune_bounded
from skyform.plan.optimizer.egress_rows import hierarchical, region_blocks
from skyform.plan.optimizer.prepared import Prepared
from skyform.plan.optimizer.prune import prune_twin_places
from skyform.spec import load_task

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_twins_priced_by_region_are_found_comparing_their_own_region_only():
    dropped = 0
    for seed in range(300):
        problem = random_problem(seed, hierarchical=True, max_tasks=6, max_candidates=8)
        fast, full = Prepared(problem), Prepared(replace(problem, egress_by_region=False))
        tasks = list(range(len(problem.tasks)))
        assert prune_twin_places(fast, tasks) == prune_twin_places(full, tasks)
        assert fast.alive == full.alive
        dropped += sum(len(r) for r in full.rank) - sum(len(a) for a in full.alive)
    assert dropped > 0  # the cases do have twins


def test_cost_bounds_priced_by_region_drop_what_the_general_bounds_drop():
    dropped = 0
    for seed in range(300):
        problem = random_problem(seed, hierarchical=True, objective="cost", max_tasks=6)
        fast, full = Prepared(problem), Prepared(replace(problem, egress_by_region=False))
        tasks = list(fast.order)
        assert prune_bounded(fast, tasks) == prune_bounded(full, tasks), seed
        assert fast.alive == full.alive, seed
        dropped += sum(len(r) for r in full.rank) - sum(len(a) for a in full.alive)
    assert dropped > 100  # the bounds do bite on these cases


def test_one_pair_per_pair_of_regions_gives_the_blocks_of_every_pair():
    edges = 0
    for seed in range(200):
        prep = Prepared(random_problem(seed, hierarchical=True, max_tasks=6, max_candidates=8))
        regions = prep.regions
        for u, v, gb in prep.edges:
            src, dst = list(dict.fromkeys(prep.place[u])), list(dict.fromkeys(prep.place[v]))
            table = {(a, b): prep.move(a, b, gb) for a in src for b in dst}
            same, blocks = region_blocks(prep, src, dst, gb, regions)
            assert blocks == hierarchical(src, dst, table, regions)
            assert same == {(a, b): moved for (a, b), moved in table.items() if a == b}
            edges += gb > 0 and len(src) > 1 and len(dst) > 1
    assert edges > 50


@pytest.mark.parametrize("objective", ["cost", "time"])
def test_the_ilp_priced_by_region_gives_the_general_answer(objective):
    for seed in range(60):
        problem = random_problem(seed, hierarchical=True, objective=objective, max_tasks=6)
        assert problem.egress_by_region
        general = solve(replace(problem, egress_by_region=False), method="ilp", pruning=False)
        by_region = solve(problem, method="ilp", pruning=False)
        assert (by_region.choice, by_region.cost) == (general.choice, general.cost)
        assert by_region.choice == brute_force(problem).choice


@pytest.mark.parametrize("case", ["dag5", "dag20"])
def test_the_bench_dags_on_the_bundled_catalog_plan_the_same_either_way(case, bundled, tmp_path):
    sys.path.insert(0, str(BENCH))
    try:
        from plan_cases import write_case
    finally:
        sys.path.remove(str(BENCH))
    problem = problem_for(load_task(write_case(case, tmp_path)), bundled)
    assert problem.egress_by_region  # the catalog's egress says it is priced by region
    # the ILP is what prices egress by region; the cost bound would answer dag5 by enumeration
    general = solve(replace(problem, egress_by_region=False), method="ilp")
    by_region = solve(problem, method="ilp")
    assert by_region.method == general.method == "ilp"
    assert (by_region.choice, by_region.cost) == (general.choice, general.cost)
