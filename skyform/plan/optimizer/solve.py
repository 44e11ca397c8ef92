"""`solve(problem)`: prune, split into independent components, solve each, make it canonical.

Components are the weakly connected parts of the task graph (edges without data still order
tasks, which matters for the makespan). Totals combine as sum (cost) and max (makespan), so:
- objective cost: each component takes its own lexicographic optimum (cost, then makespan);
  the makespan M is the largest of theirs; a component that finishes before M is then only
  held to "its optimal cost, makespan <= M" and takes the earliest assignment in rank order;
- objective time: M = the largest of the components' best makespans; every component then
  minimises cost subject to "makespan <= M" (a short task need not rush), then rank order.
Methods per component: `trivial` (one assignment), `dp` (a chain, no bounds), `enumerate`
(at most ENUMERATE_LIMIT assignments), else `ilp`.
"""

from __future__ import annotations

from math import prod
from typing import Literal

from skyform.plan.optimizer.bound import prune_bounded
from skyform.plan.optimizer.brute import ENUMERATE_LIMIT, lexmin_enumerate
from skyform.plan.optimizer.dp import chain_edges, lexmin_chain
from skyform.plan.optimizer.prepared import Prepared
from skyform.plan.optimizer.problem import Problem, Solution, tol
from skyform.plan.optimizer.prune import prune_dominated, prune_places, prune_twin_places
from skyform.plan.optimizer.result import build_solution

Method = Literal["auto", "dp", "ilp", "enumerate"]
DOMINANCE_LIMIT = 400  # candidates in a component: above, prune_dominated is skipped


def solve(problem: Problem, *, method: Method = "auto", pruning: bool = True) -> Solution:
    """The canonical optimum of `problem` (see the package docstring for the order).

    `method` forces a solver for every component it applies to (`dp` only fits chains solved
    without bounds; elsewhere the automatic choice is used); `pruning=False` skips pruning.
    """
    prep = Prepared(problem)
    dropped = prune_places(prep) if pruning else 0
    comps = components(prep)
    choice = [alive[0] for alive in prep.alive]
    used: list[str] = []
    values: list[tuple[float, float]] = []
    for comp in comps:
        if pruning and len(comp) > 1:
            dropped += prune_twin_places(prep, comp)
        if pruning and _needs_search(prep, comp, method):
            dropped += prune_dominated(prep, comp)
        if pruning and problem.objective == "cost" and _searched(prep, comp, method):
            dropped += prune_bounded(prep, comp)
        choice, how = _lexmin(prep, comp, choice, method)
        used.append(how)
        values.append(prep.pair(*prep.score(choice, comp)))
    if problem.objective == "cost":
        span = max((s for _, s in values), default=0.0)
        for n, comp in enumerate(comps):
            p, s = values[n]
            if s < span - tol(span):
                choice, how = _lexmin(prep, comp, choice, method, p_cap=p, s_cap=span)
                used[n] = how
    else:
        span = max((p for p, _ in values), default=0.0)
        for n, comp in enumerate(comps):
            if values[n][0] < span - tol(span):
                choice, how = _lexmin(prep, comp, choice, method, p_cap=span)
                used[n] = how
    stats = {
        "candidates": sum(len(t.candidates) for t in problem.tasks),
        "pruned": dropped,
        "components": len(comps),
        "ilp_solves": prep.ilp_solves,
    }
    return build_solution(prep, choice, "+".join(dict.fromkeys(used)), stats)


def components(prep: Prepared) -> list[list[int]]:
    """Weakly connected components, each in topological order, ordered by first task."""
    parent = list(range(prep.n))

    def root(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for u, v, _ in prep.edges:
        ru, rv = root(u), root(v)
        if ru != rv:
            parent[max(ru, rv)] = min(ru, rv)
    groups: dict[int, list[int]] = {}
    for v in prep.order:
        groups.setdefault(root(v), []).append(v)
    return sorted(groups.values(), key=min)


def _needs_search(prep: Prepared, comp: list[int], method: Method) -> bool:
    """True when the component goes to enumeration or a small ILP, where pruning pays off.
    A big ILP goes without: pairwise dominance costs seconds there and removes little, while
    the ILP's first LP narrows the candidates exactly (canonical.py)."""
    if method != "enumerate" and sum(len(prep.alive[v]) for v in comp) > DOMINANCE_LIMIT:
        return False
    return _searched(prep, comp, method)


def _searched(prep: Prepared, comp: list[int], method: Method) -> bool:
    """True when the component goes to enumeration or the ILP (not a chain's DP)."""
    if all(len(prep.alive[v]) == 1 for v in comp):
        return False
    return method in ("ilp", "enumerate") or chain_edges(prep, comp) is None


def _lexmin(
    prep: Prepared,
    comp: list[int],
    choice: list[int],
    method: Method,
    p_cap: float | None = None,
    s_cap: float | None = None,
) -> tuple[list[int], str]:
    size = prod(len(prep.alive[v]) for v in comp)
    if size == 1:
        out = list(choice)
        for v in comp:
            out[v] = prep.alive[v][0]
        return out, "trivial"
    bounded = p_cap is not None or s_cap is not None
    links = chain_edges(prep, comp)
    if links is not None and not bounded and method in ("auto", "dp"):
        return lexmin_chain(prep, comp, links, choice), "dp"
    if method == "enumerate" or (method == "auto" and size <= ENUMERATE_LIMIT):
        return lexmin_enumerate(prep, comp, prep.alive, p_cap, s_cap, choice), "enumerate"
    from skyform.plan.optimizer.canonical import lexmin_ilp

    return lexmin_ilp(prep, comp, choice, p_cap, s_cap), "ilp"
