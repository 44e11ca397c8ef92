"""Chains: dynamic programming over (task, candidate), as SkyPilot does, with exact ties.

On a chain both objectives add up along the chain (cost by definition; the makespan because
every task starts when its only parent's outputs arrive), so a backward pass computes, for
each candidate, the best (primary, secondary) of the rest of the chain; a forward pass then
takes, task by task, the first candidate in rank order that still completes an optimum.
"""

from __future__ import annotations

from skyform.plan.optimizer.prepared import Prepared
from skyform.plan.optimizer.problem import tol

Pair = tuple[float, float]


def better(a: Pair, b: Pair) -> bool:
    """a is strictly better than b, lexicographically, up to the tolerance."""
    if a[0] < b[0] - tol(b[0]):
        return True
    if a[0] > b[0] + tol(b[0]):
        return False
    return a[1] < b[1] - tol(b[1])


def equal(a: Pair, b: Pair) -> bool:
    return not better(a, b) and not better(b, a)


def chain_edges(prep: Prepared, tasks: list[int]) -> list[int] | None:
    """Edge index between consecutive tasks, if `tasks` (topological order) form a chain."""
    found = []
    for t in range(1, len(tasks)):
        ks = prep.parents[tasks[t]]
        if len(ks) != 1 or prep.edges[ks[0]][0] != tasks[t - 1]:
            return None
        if len(prep.children[tasks[t - 1]]) != 1:
            return None
        found.append(ks[0])
    return found


def lexmin_chain(prep: Prepared, tasks: list[int], links: list[int], base: list[int]) -> list[int]:
    """Canonical lexicographic optimum of a chain (see `chain_edges` for `links`)."""
    alive = [prep.alive[v] for v in tasks]
    last = len(tasks) - 1
    # togo[t][i]: best (primary, secondary) from task t on, given t takes candidate i;
    # best_next[t][i]: the part of it after task t (the edge to t+1 and beyond).
    togo: list[dict[int, Pair]] = [{} for _ in tasks]
    best_next: list[dict[int, Pair]] = [{} for _ in tasks]
    for i in alive[last]:
        togo[last][i] = prep.unary(tasks[last], i)
    for t in range(last - 1, -1, -1):
        u, v, gb = prep.edges[links[t]]
        tail = [(prep.place[v][j], *togo[t + 1][j]) for j in alive[t + 1]]
        for i in alive[t]:
            best = _best(_continuations(prep, prep.place[u][i], gb, tail))
            best_next[t][i] = best
            p0, s0 = prep.unary(u, i)
            togo[t][i] = (p0 + best[0], s0 + best[1])
    choice = list(base)
    target = _best(list(togo[0][i] for i in alive[0]))
    prev = next(i for i in alive[0] if equal(togo[0][i], target))
    choice[tasks[0]] = prev
    for t in range(1, last + 1):
        u, v, gb = prep.edges[links[t - 1]]
        want, nxt = best_next[t - 1][prev], togo[t]
        tail = [(prep.place[v][j], *nxt[j]) for j in alive[t]]
        options = _continuations(prep, prep.place[u][prev], gb, tail)
        prev = next(j for j, pair in zip(alive[t], options, strict=True) if equal(pair, want))
        choice[tasks[t]] = prev
    return choice


def _continuations(prep: Prepared, here: int, gb: float, tail: list) -> list[Pair]:
    """(primary, secondary) of moving on from place `here` to each (place, p, s) of `tail`."""
    moves = prep.moves_from(here, gb, [there for there, _, _ in tail])
    if prep.objective == "cost":
        return [(c + p, h + s) for (c, h), (_, p, s) in zip(moves, tail, strict=True)]
    return [(h + p, c + s) for (c, h), (_, p, s) in zip(moves, tail, strict=True)]


def _best(pairs: list[Pair]) -> Pair:
    """Lexicographic minimum up to the tolerance: least primary, then least secondary among
    the pairs whose primary is within tolerance of it."""
    low = min(p for p, _ in pairs)
    cut = low + tol(low)
    return low, min(s for p, s in pairs if p <= cut)
