"""Exact pruning: drop candidates that can never be in the canonical optimum.

Candidate b of task v is dropped when another candidate a of v is at least as good in every
completion of the other tasks, and strictly better or earlier in rank order when they tie:
swapping b for a in any optimal assignment then gives an optimal assignment that is smaller
in rank order, so the canonical answer never holds b. "Every completion" is bounded by the
worst case over the places v's neighbours can still use:

- cost: Δ = cost(a) - cost(b) + Σ over v's data edges of max over neighbour places of the
  difference in transfer price (exact: cost adds up);
- makespan: v's finish moves by at most max(0, worst Δ of an incoming transfer) + Δ duration,
  and anything downstream by at most that + max(0, worst Δ of an outgoing transfer); the
  makespan moves by at most the positive part of the latter.

Two candidates at the same place see the same transfers, so there only their own numbers
count (`prune_places`, the "best candidate per place" rule, run on every task). A whole place
can be dominated by another of its region (`prune_twin_places`, per component). The general
rule (`prune_dominated`) runs on components headed for enumeration or a small ILP (a big one
narrows faster by its LP's reduced costs, see canonical.py), comparing each
candidate with the DOMINATORS first ones in rank order, and repeats while it removes something:
each round only looks at places the neighbours still have, which is sound because the
canonical answer survives every round.
"""

from __future__ import annotations

from operator import le

from skyform.plan.optimizer.prepared import Prepared
from skyform.plan.optimizer.problem import tol

MAX_ROUNDS = 4
DOMINATORS = 12  # candidates tried as "a" for each b (the cheapest ones, in rank order)


def prune_places(prep: Prepared, tasks: list[int] | None = None) -> int:
    """Keep the best candidates per place; returns how many were dropped."""
    dropped = 0
    for v in range(prep.n) if tasks is None else tasks:
        kept = _same_place(prep, v)
        dropped += len(prep.alive[v]) - len(kept)
        prep.alive[v] = kept
    return dropped


def prune_twin_places(prep: Prepared, tasks: list[int]) -> int:
    """Drop every candidate at a place another place of the same region dominates.

    Place z1 dominates z2 for a component when (a) each of its tasks that can run at z2 has a
    candidate at z1 that costs and lasts no more and comes earlier in rank order, and (b) data
    moves to and from z1 no dearer or slower than to and from z2, from or to every place the
    component uses and between z1/z2 themselves, for each data size on its edges. Moving all
    tasks at z2 to z1 then never makes an assignment worse and makes it earlier in rank order
    at the first task moved, so the canonical answer never uses z2 (typically: zones of one
    region with the same prices, which only tie-breaking tells apart).
    """
    at: dict[int, dict[int, list[int]]] = {}  # place -> task -> candidates there
    for v in tasks:
        for i in prep.alive[v]:
            at.setdefault(prep.place[v][i], {}).setdefault(v, []).append(i)
    members = set(tasks)
    sizes = sorted({gb for u, _, gb in prep.edges if gb > 0 and u in members})
    regions: dict[tuple, list[int]] = {}
    for place in sorted(at):
        where = prep.places[place]
        regions.setdefault((where.cloud, where.region), []).append(place)
    gone: set[int] = set()
    everywhere = None if prep.problem.egress_by_region else _Rows(prep, sorted(at))
    for places in regions.values():
        # Priced by region, data moves between z1 or z2 and a place of another region alike:
        # only the places of their own region can tell them apart (a few, not every place).
        rows = everywhere or _Rows(prep, places)
        for z2 in places:
            for z1 in places:
                if z1 != z2 and z1 not in gone and _twin(prep, at, rows, z1, z2, sizes):
                    gone.add(z2)
                    break
    dropped = 0
    for v in tasks:
        kept = [i for i in prep.alive[v] if prep.place[v][i] not in gone]
        dropped += len(prep.alive[v]) - len(kept)
        prep.alive[v] = kept
    return dropped


class _Rows:
    """Per data size and place z: USD and hours from z to, and to z from, every place in
    `order`, as lists (built once per place, compared element-wise at C speed)."""

    def __init__(self, prep: Prepared, order: list[int]) -> None:
        self.prep = prep
        self.order = order
        self.pos = {m: n for n, m in enumerate(order)}
        self._rows: dict[tuple[float, int], tuple[list[float], ...]] = {}

    def of(self, gb: float, z: int) -> tuple[list[float], ...]:
        """(usd out, hours out, usd in, hours in) of place z."""
        found = self._rows.get((gb, z))
        if found is None:
            out = self.prep.moves_from(z, gb, self.order)
            into = self.prep.moves_to(z, gb, self.order)
            found = self._rows[(gb, z)] = (
                [c for c, _ in out],
                [h for _, h in out],
                [c for c, _ in into],
                [h for _, h in into],
            )
        return found

    def no_worse(self, gb: float, z1: int, z2: int) -> bool:
        """Data moves to and from z1 no dearer or slower than to and from z2, for every
        place of `order` but these two."""
        i, j = sorted((self.pos[z1], self.pos[z2]))
        for better, worse in zip(self.of(gb, z1), self.of(gb, z2), strict=True):
            for part in (slice(None, i), slice(i + 1, j), slice(j + 1, None)):
                if not all(map(le, better[part], worse[part])):
                    return False
        return True


def _twin(prep: Prepared, at: dict, rows: _Rows, z1: int, z2: int, sizes: list[float]) -> bool:
    """Does place z1 dominate place z2 (see prune_twin_places)?"""
    for v, here in at[z2].items():
        there = at[z1].get(v, ())
        for j in here:
            if not any(
                prep.cost[v][i] <= prep.cost[v][j]
                and prep.dur[v][i] <= prep.dur[v][j]
                and prep.pos[v][i] < prep.pos[v][j]
                for i in there
            ):
                return False
    move = prep.move
    for gb in sizes:
        same = move(z1, z1, gb)
        if not (_le2(same, move(z2, z2, gb)) and _le2(same, move(z2, z1, gb))):
            return False
        if not _le2(same, move(z1, z2, gb)):
            return False
        if not rows.no_worse(gb, z1, z2):
            return False
    return True


def _le2(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[0] and a[1] <= b[1]


def prune_dominated(prep: Prepared, tasks: list[int]) -> int:
    """Drop candidates another one dominates (see the module docstring); returns the count."""
    dropped = 0
    # A task's verdict depends only on its own list and the places its neighbours still use:
    # a later round looks again only at tasks whose own list or a neighbour's changed since
    # their last look (the others would keep exactly what they kept).
    near = [{v, *(u for k in (*prep.parents[v], *prep.children[v]) for u in prep.edges[k][:2])}
            for v in range(prep.n)]  # fmt: skip
    looked = dict.fromkeys(tasks, -1)
    changed_at = dict.fromkeys(tasks, -2)
    clock = 0
    for _ in range(MAX_ROUNDS):
        changed = 0
        for v in tasks:
            seen = looked[v]
            if seen >= 0 and all(changed_at.get(u, -2) < seen for u in near[v]):
                continue
            clock += 1
            looked[v] = clock
            kept = _dominance(prep, v)
            if len(kept) != len(prep.alive[v]):
                changed += len(prep.alive[v]) - len(kept)
                changed_at[v] = clock
            prep.alive[v] = kept
        dropped += changed
        if not changed:
            break
    return dropped


def _le(x: float, y: float) -> bool:
    return x <= y + tol(y)


def _same_place(prep: Prepared, v: int) -> list[int]:
    kept: list[int] = []
    front: dict[int, list[tuple[float, float]]] = {}
    for b in prep.alive[v]:  # rank order: every earlier a has primary(a) <= primary(b)
        p_b, s_b = prep.unary(v, b)
        here = front.setdefault(prep.place[v][b], [])
        if here and prep.objective == "cost" and here[0][0] < p_b - tol(p_b):
            continue  # cost adds up: a cheaper twin is always cheaper
        if any(_le(s_a, s_b) for _, s_a in here):
            continue
        here.append((p_b, s_b))
        kept.append(b)
    return kept


class _Side:
    """One data edge at v: v's transfers (USD, hours) to or from each place the neighbour can
    still use, per place of v, with the row's min/max for quick bounds."""

    def __init__(self, prep: Prepared, k: int, v: int) -> None:
        src, dst, gb = prep.edges[k]
        self.incoming = dst == v
        other = src if self.incoming else dst
        theirs = list(dict.fromkeys(prep.place[other][i] for i in prep.alive[other]))
        self.usd: dict[int, list[float]] = {}
        self.hours: dict[int, list[float]] = {}
        self.low: dict[int, tuple[float, int]] = {}  # (min usd, where)
        self.high: dict[int, float] = {}
        for i in prep.alive[v]:
            mine = prep.place[v][i]
            if mine in self.usd:
                continue
            if self.incoming:
                moves = prep.moves_to(mine, gb, theirs)
            else:
                moves = prep.moves_from(mine, gb, theirs)
            row = [m[0] for m in moves]
            self.usd[mine] = row
            self.hours[mine] = [m[1] for m in moves]
            self.low[mine] = min((c, n) for n, c in enumerate(row))
            self.high[mine] = max(row)

    def worst_usd(self, a: int, b: int) -> float:
        return max(x - y for x, y in zip(self.usd[a], self.usd[b], strict=True))

    def worst_hours(self, a: int, b: int) -> float:
        return max(x - y for x, y in zip(self.hours[a], self.hours[b], strict=True))


def _dominance(prep: Prepared, v: int) -> list[int]:
    alive = prep.alive[v]
    if len(alive) < 2:
        return alive
    sides = []
    if prep.problem.egress is not None:
        ks = [*prep.parents[v], *prep.children[v]]
        sides = [_Side(prep, k, v) for k in ks if prep.edges[k][2] > 0]
    leaders = alive[:DOMINATORS]
    return [
        b for b in alive if not any(_dominates(prep, v, a, b, sides) for a in leaders if a != b)
    ]


def _cost_delta(prep: Prepared, v: int, a: int, b: int, sides: list[_Side]) -> float:
    """Worst-case change of the total cost when v moves from b to a."""
    delta = prep.cost[v][a] - prep.cost[v][b]
    pa, pb = prep.place[v][a], prep.place[v][b]
    if pa == pb or not sides:
        return delta
    low = sum(side.usd[pa][side.low[pb][1]] - side.low[pb][0] for side in sides)
    if delta + low > tol(prep.cost[v][b]):
        return delta + low  # already too much: the exact value is at least this
    high = sum(side.high[pa] - side.low[pb][0] for side in sides)
    if delta + high < -tol(prep.cost[v][b]):
        return delta + high  # already enough: the exact value is at most this
    return delta + sum(side.worst_usd(pa, pb) for side in sides)


def _span_delta(prep: Prepared, v: int, a: int, b: int, sides: list[_Side]) -> float:
    """Upper bound on the change of the makespan when v moves from b to a (>= 0)."""
    change = prep.dur[v][a] - prep.dur[v][b]
    pa, pb = prep.place[v][a], prep.place[v][b]
    into = out = 0.0
    if pa != pb:
        for side in sides:
            hours = side.worst_hours(pa, pb)
            if side.incoming:
                into = max(into, hours)
            else:
                out = max(out, hours)
    return max(0.0, into + change + out)


def _dominates(prep: Prepared, v: int, a: int, b: int, sides: list[_Side]) -> bool:
    cost_ref, span_ref = abs(prep.cost[v][b]), abs(prep.dur[v][b])
    if prep.objective == "cost":
        primary, p_ref = _cost_delta(prep, v, a, b, sides), cost_ref
        if primary > tol(p_ref):
            return False
        if primary < -tol(p_ref):
            return True
        secondary, s_ref = _span_delta(prep, v, a, b, sides), span_ref
    else:
        if prep.dur[v][a] - prep.dur[v][b] > tol(span_ref):
            return False  # the makespan bound is at least the change in duration
        primary, p_ref = _span_delta(prep, v, a, b, sides), span_ref
        if primary > tol(p_ref):
            return False
        secondary, s_ref = _cost_delta(prep, v, a, b, sides), cost_ref
    if secondary > tol(s_ref):
        return False
    return secondary < -tol(s_ref) or prep.pos[v][a] < prep.pos[v][b]
