"""Every solver path against exhaustive search on seeded random problems: same objective values
AND the same choice (the documented tie-breaking order is exact, not best-effort)."""

from __future__ import annotations

import importlib

import pytest
from optimizer_helpers import random_problem

from skyform.plan.optimizer import brute_force, solve


def _same(found, expected, seed):
    where = f"seed {seed}: {found.method}"
    assert found.cost == pytest.approx(expected.cost, abs=1e-9), where
    assert found.makespan == pytest.approx(expected.makespan, abs=1e-9), where
    assert found.choice == expected.choice, where


def _seeds(block: int, size: int) -> range:
    return range(block * size, (block + 1) * size)


@pytest.mark.parametrize("block", range(6))
def test_dp_equals_brute_force_on_random_chains(block):
    for seed in _seeds(block, 60):
        problem = random_problem(seed, chain=True, max_tasks=6)
        found = solve(problem, method="dp")
        assert "ilp" not in found.method
        _same(found, brute_force(problem), seed)


@pytest.mark.parametrize("block", range(4))
@pytest.mark.parametrize("objective", ["cost", "time"])
@pytest.mark.parametrize("hierarchical", [True, False], ids=["regions", "pairs"])
def test_ilp_equals_brute_force_on_random_dags(block, objective, hierarchical):
    for seed in _seeds(block, 12):
        problem = random_problem(
            seed, objective=objective, hierarchical=hierarchical, max_tasks=6, max_candidates=6
        )
        expected = brute_force(problem)
        for pruning in (True, False):
            _same(solve(problem, method="ilp", pruning=pruning), expected, seed)


@pytest.mark.parametrize("block", range(4))
def test_enumeration_and_auto_equal_brute_force(block):
    for seed in _seeds(block, 50):
        problem = random_problem(seed, max_tasks=6)
        expected = brute_force(problem)
        _same(solve(problem, method="enumerate"), expected, seed)
        _same(solve(problem), expected, seed)


@pytest.mark.parametrize("block", range(3))
def test_pruning_never_changes_the_answer(block):
    for seed in _seeds(block, 60):
        problem = random_problem(seed, max_tasks=6, max_candidates=6)
        pruned = solve(problem, method="enumerate")
        unpruned = solve(problem, method="enumerate", pruning=False)
        assert pruned.choice == unpruned.choice, seed
        assert pruned.stats["pruned"] >= 0


def test_pruning_removes_something_on_these_problems():
    """Guard against a pruning pass that silently stopped working."""
    dropped = sum(
        solve(random_problem(seed, max_candidates=6), method="enumerate").stats["pruned"]
        for seed in range(100)
    )
    assert dropped > 50


def test_both_ilp_forms_and_every_method_are_exercised():
    methods = set()
    for seed in range(60):
        methods.update(solve(random_problem(seed, max_tasks=6, max_candidates=6)).method.split("+"))
    assert {"dp", "enumerate", "trivial"} <= methods
    forced = [solve(random_problem(seed, max_tasks=6), method="ilp") for seed in range(10)]
    assert any("ilp" in s.method and s.stats["ilp_solves"] >= 2 for s in forced)


@pytest.mark.parametrize("objective", ["cost", "time"])
@pytest.mark.parametrize("hierarchical", [True, False], ids=["regions", "pairs"])
def test_a_big_ilp_without_dominance_pruning_equals_brute_force(
    objective, hierarchical, monkeypatch
):
    """Components above DOMINANCE_LIMIT candidates skip pairwise dominance and rely on the
    LP's reduced costs to narrow the candidates: the answer must not change."""
    solve_module = importlib.import_module("skyform.plan.optimizer.solve")  # not the function
    monkeypatch.setattr(solve_module, "DOMINANCE_LIMIT", 0)
    for seed in range(24):
        problem = random_problem(
            seed, objective=objective, hierarchical=hierarchical, max_tasks=6, max_candidates=6
        )
        _same(solve(problem, method="ilp"), brute_force(problem), seed)


def test_the_lp_narrows_the_candidates_on_these_problems(monkeypatch):
    """Guard against reduced-cost narrowing that silently stopped working (it is what keeps
    the 20-task DAG on a big catalog fast): unpruned, most forced-ILP solves narrow after an LP."""
    import skyform.plan.optimizer.canonical as canonical

    narrowed = []
    real = canonical._narrow

    def spy(prep, comp, support):
        narrowed.append(real(prep, comp, support))
        return narrowed[-1]

    monkeypatch.setattr(canonical, "_narrow", spy)
    for seed in range(20):
        solve(random_problem(seed, max_tasks=6, max_candidates=6), method="ilp", pruning=False)
    assert sum(narrowed) > len(narrowed) // 2
