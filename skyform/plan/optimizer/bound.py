"""Exact pruning by cost bounds (objective `cost`): drop candidates that are in no assignment
whose cost is within tolerance of the optimum.

Upper bound U: the cost of a few complete assignments of the component (every task on its
first candidate; every task at one place, where all of them can run there). Lower bound of a
candidate i of task v: cost(i) + the cheapest candidate of every other task + per data edge
the cheapest transfer between the places its two ends can still use (with v's end at i's
place). An assignment holding i costs at least that, so when it exceeds U (plus twice the
tolerance the solvers use to call costs equal) i is in no optimum, nor in any assignment a
later pass may still take (those keep the component's optimal cost), so the canonical answer
never holds it. On a diamond-shaped DAG this leaves a handful of assignments to enumerate,
where CBC would otherwise have been started.
"""

from __future__ import annotations

import math

from skyform.plan.optimizer.prepared import Prepared
from skyform.plan.optimizer.problem import tol


def prune_bounded(prep: Prepared, comp: list[int]) -> int:
    """Drop the candidates of `comp` whose cost lower bound exceeds a known assignment's
    cost; returns how many were dropped."""
    alive = prep.alive
    upper = _upper(prep, comp)
    limit = upper + 2 * tol(upper)
    cheapest = {v: min(prep.cost[v][i] for i in alive[v]) for v in comp}
    places = {v: list(dict.fromkeys(prep.place[v][i] for i in alive[v])) for v in comp}
    edges = [k for v in comp for k in prep.children[v] if prep.edges[k][2] > 0]
    # per edge and place of one end: the cheapest transfer to the other end's places
    from_src: dict[tuple[int, int], float] = {}
    into_dst: dict[tuple[int, int], float] = {}
    edge_low: dict[int, float] = {}
    for k in edges:
        u, w, gb = prep.edges[k]
        for a, usd in _cheapest(prep, gb, places[u], places[w], outbound=True).items():
            from_src[(k, a)] = usd
        for b, usd in _cheapest(prep, gb, places[w], places[u], outbound=False).items():
            into_dst[(k, b)] = usd
        edge_low[k] = min(from_src[(k, a)] for a in places[u])
    base = sum(cheapest.values()) + sum(edge_low.values())
    dropped = 0
    for v in comp:
        own = [k for k in prep.parents[v] if k in edge_low]
        out = [k for k in prep.children[v] if k in edge_low]
        rest = base - cheapest[v] - sum(edge_low[k] for k in own + out)
        kept = []
        for i in alive[v]:
            at = prep.place[v][i]
            low = rest + prep.cost[v][i]
            low += sum(into_dst[(k, at)] for k in own) + sum(from_src[(k, at)] for k in out)
            if low <= limit:
                kept.append(i)
        dropped += len(alive[v]) - len(kept)
        alive[v] = kept
    return dropped


def _cheapest(
    prep: Prepared, gb: float, ends: list[int], others: list[int], *, outbound: bool
) -> dict[int, float]:
    """Per place of `ends`: the cheapest move between it and any place of `others` (data
    leaving it when `outbound`, arriving otherwise).

    Priced by region (Problem.egress_by_region), a move between two regions costs the same
    whichever of their places it joins, so each end compares one place per other region and
    only its own region place by place: on a catalog with 30 regions per cloud that is a few
    thousand moves per edge instead of every pair of places (~10^5)."""

    pick = prep.moves_from if outbound else prep.moves_to
    if not prep.problem.egress_by_region:
        return {a: min(usd for usd, _ in pick(a, gb, others)) for a in ends}
    regions = prep.regions
    by_region: dict[tuple, list[int]] = {}
    for b in others:
        by_region.setdefault(regions[b], []).append(b)
    away: dict[tuple, float] = {}  # own region -> the cheapest move to another region
    found: dict[int, float] = {}
    for a in ends:
        mine = regions[a]
        if mine not in away:
            there = [places[0] for region, places in by_region.items() if region != mine]
            away[mine] = min((usd for usd, _ in pick(a, gb, there)), default=math.inf)
        near = [usd for usd, _ in pick(a, gb, by_region.get(mine, []))]
        found[a] = min(away[mine], *near) if near else away[mine]
    return found


def _upper(prep: Prepared, comp: list[int]) -> float:
    """The cheapest of a few complete assignments of `comp` over the alive candidates."""
    first = [alive[0] if alive else 0 for alive in prep.alive]
    best = prep.score(first, comp)[0]
    at: dict[int, dict[int, int]] = {}  # place -> task -> its first candidate there
    for v in comp:
        for i in prep.alive[v]:
            at.setdefault(prep.place[v][i], {}).setdefault(v, i)
    for here in at.values():
        if len(here) == len(comp):
            choice = list(first)
            for v, i in here.items():
                choice[v] = i
            best = min(best, prep.score(choice, comp)[0])
    return best
