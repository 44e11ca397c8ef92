"""Exhaustive search: the reference the other solvers are tested against, and the solver for
components small enough that trying every assignment is cheaper than starting CBC."""

from __future__ import annotations

import itertools

from skyform.plan.optimizer.prepared import Prepared
from skyform.plan.optimizer.problem import Problem, Solution, tol
from skyform.plan.optimizer.result import build_solution

ENUMERATE_LIMIT = 2048  # assignments: more goes to the ILP (CBC's start-up costs more)


def lexmin_enumerate(
    prep: Prepared,
    tasks: list[int],
    options: list[list[int]],
    p_cap: float | None = None,
    s_cap: float | None = None,
    base: list[int] | None = None,
) -> list[int]:
    """The canonical assignment of `tasks` (a union of components, topological order).

    Feasible: primary <= p_cap and secondary <= s_cap (each when given). Without p_cap the
    primary is minimised first, without s_cap then the secondary; among what is left, the
    assignment that is smallest position by position in candidate rank order wins.
    `options[v]` lists v's candidates in rank order; `base` supplies the other tasks' choices.
    """
    choice = list(base) if base is not None else [0] * prep.n
    scored: list[tuple[tuple[int, ...], float, float]] = []
    for combo in itertools.product(*(options[v] for v in tasks)):
        for v, i in zip(tasks, combo, strict=True):
            choice[v] = i
        p, s = prep.pair(*prep.score(choice, tasks))
        if p_cap is not None and p > p_cap + tol(p_cap):
            continue
        if s_cap is not None and s > s_cap + tol(s_cap):
            continue
        scored.append((combo, p, s))
    if not scored:
        raise ValueError("no assignment satisfies the bounds")
    if p_cap is None:
        best = min(p for _, p, _ in scored)
        scored = [row for row in scored if row[1] <= best + tol(best)]
    if s_cap is None:
        best = min(s for _, _, s in scored)
        scored = [row for row in scored if row[2] <= best + tol(best)]
    combo = scored[0][0]  # product() yields in lexicographic rank order
    for v, i in zip(tasks, combo, strict=True):
        choice[v] = i
    return choice


def brute_force(problem: Problem) -> Solution:
    """Try every assignment of the unpruned problem (tests only: exponential)."""
    prep = Prepared(problem)
    choice = lexmin_enumerate(prep, prep.order, prep.rank)
    return build_solution(prep, choice, "brute")
