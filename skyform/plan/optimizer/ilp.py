"""General DAGs: an integer program solved by CBC (lp.py writes the model as the MPS file PuLP
would and runs PuLP's bundled binary; only needed when a component is neither a chain nor tiny).

Variables: one-hot c[v,i] over v's remaining candidates. Data on an edge u->v is priced by
where u and v run, a product of two one-hot vectors, linearised without candidate pairs:
- when the egress model is hierarchical (the catalog's is: one price per pair of regions, and
  inside a region one price between any two different places), a transportation flow
  f[A,B] between u's region A and v's region B (sum over B = "u in A", sum over A = "v in B"),
  plus, per place l both can use, w[l] <= "u at l", w[l] <= "v at l" for the same-place
  discount (and w[l] >= "u at l" + "v at l" - 1 should the same place ever cost more, so w
  is exact either way); a transfer time that is one constant between any two different places
  (the catalog's 10 Gbps) needs only the w terms;
- otherwise the same transportation form over pairs of places.
All of these are exact at integer points, so the LP relaxation only decides speed.
Time: start[v] >= start[u] + dur[u] + transfer(u,v); makespan >= start[v] + dur[v].
The model is built once per component and re-solved with other objectives and bounds;
names are derived from indices, so the same input writes the same model file.
"""

from __future__ import annotations

from collections.abc import Callable

from skyform.plan.optimizer.egress_rows import (
    apart_hours,
    by_region,
    hierarchical,
    two_places,
)
from skyform.plan.optimizer.lp import EQ, GE, LE, Coefs, Model, Var
from skyform.plan.optimizer.prepared import Prepared
from skyform.plan.optimizer.problem import tol

Terms = list[tuple[Var, float]]  # (variable, coefficient)
Expr = tuple[Coefs, float]  # a linear expression: coefficients and a constant
ROUNDING_TOL = 1e-4  # LP one-hot values this close to 0 or 1 are rounded (then checked)
PRINTED_TOL = 1e-7  # relative: how far CBC's printed LP optimum can be from the true one


class PlacementIlp:
    def __init__(self, prep: Prepared, tasks: list[int]) -> None:
        self.prep = prep
        self.tasks = tasks
        self.prob = Model()
        self.var: dict[tuple[int, int], Var] = {}
        for v in tasks:
            alive = prep.alive[v]
            if len(alive) > 1:
                row = [Var(f"c_{v}_{i}", 0, 1, integer=True) for i in alive]
                for i, x in zip(alive, row, strict=True):
                    self.var[(v, i)] = x
                self.prob.add(f"one_{v}", _ones(row), EQ, -1)
        cost_terms: Terms = []
        cost_const = 0.0
        for v in tasks:
            terms, const = self._linear(v, prep.cost[v])
            cost_terms += terms
            cost_const += const
        member = set(tasks)
        # makespan rows, in the model only when they matter: name -> (coefs, constant), ">= 0"
        self.timing: dict[str, Expr] = {}
        starts = {v: self._var(f"start_{v}", 0) for v in tasks}
        self.makespan = self._var("makespan", 0)
        for k, (u, v, gb) in enumerate(prep.edges):
            if u not in member:
                continue
            usd_terms, usd_const, hour_terms, hour_const = self._edge(k, u, v, gb)
            cost_terms += usd_terms
            cost_const += usd_const
            dur_terms, dur_const = self._linear(u, prep.dur[u])
            rhs = _summed([*dur_terms, *hour_terms])
            gap = _minus({starts[v]: 1, starts[u]: -1}, rhs)
            self.timing[f"after_{k}"] = (gap, -(dur_const + hour_const))
        for v in tasks:
            if not prep.children[v]:
                dur_terms, dur_const = self._linear(v, prep.dur[v])
                finish = _summed(dur_terms)
                finish[starts[v]] = finish.get(starts[v], 0) + 1
                self.timing[f"span_{v}"] = (_minus({self.makespan: 1}, finish), -dur_const)
        self.cost: Expr = (_summed(cost_terms), cost_const)
        self.solves = 0
        self.relaxed: float | None = None  # the LP optimum, when the last minimize used it
        self.timed = False
        self.caps: dict[str, Var] = {}

    # --- building blocks -------------------------------------------------------------------

    def _linear(self, v: int, values: list[float]) -> tuple[Terms, float]:
        """sum_i values[i] * c[v,i] as (terms, constant)."""
        alive = self.prep.alive[v]
        if len(alive) == 1:
            return [], values[alive[0]]
        return [(self.var[(v, i)], values[i]) for i in alive], 0.0

    def _at(self, v: int) -> dict[int, Terms | None]:
        """Place -> terms of "v runs there" (None when v has a single candidate)."""
        places: dict[int, Terms | None] = {}
        alive = self.prep.alive[v]
        for i in alive:
            where = self.prep.place[v][i]
            if len(alive) == 1:
                places[where] = None
            else:
                places.setdefault(where, []).append((self.var[(v, i)], 1.0))  # type: ignore[union-attr]
        return places

    def _edge(self, k: int, u: int, v: int, gb: float) -> tuple[Terms, float, Terms, float]:
        """Cost and hours of edge k as linear terms (+ constants)."""
        prep = self.prep
        if gb <= 0 or prep.problem.egress is None:
            return [], 0.0, [], 0.0
        src, dst = self._at(u), self._at(v)
        if prep.problem.egress_by_region and len(src) > 1 and len(dst) > 1:
            # Priced by region: one pair of places per pair of regions gives the blocks that
            # `hierarchical` would find in the table of every pair (a few thousand, not 10^5).
            from skyform.plan.optimizer.egress_rows import region_blocks

            same, by_pair = region_blocks(prep, list(src), list(dst), gb, prep.regions)
            return self._regions(k, src, dst, same, by_pair, prep.regions)
        targets = list(dst)
        table = {
            (a, b): moved
            for a in src
            for b, moved in zip(targets, prep.moves_from(a, gb, targets), strict=True)
        }
        if len(src) == 1 or len(dst) == 1:  # one side's place is known: linear already
            usd: Terms = []
            hours: Terms = []
            const = [0.0, 0.0]
            for (a, b), (c, h) in table.items():
                terms = src[a] if len(dst) == 1 else dst[b]
                if terms is None:
                    const[0] += c
                    const[1] += h
                else:
                    usd += [(x, c * w) for x, w in terms]
                    hours += [(x, h * w) for x, w in terms]
            return usd, const[0], hours, const[1]
        blocks = hierarchical(list(src), list(dst), table, prep.regions)
        if blocks is None:
            return self._pairs(k, src, dst, table)
        return self._regions(k, src, dst, table, blocks, prep.regions)

    def _pairs(self, k, src, dst, table) -> tuple[Terms, float, Terms, float]:
        flow = {}
        for a_i, a in enumerate(src):
            for b_i, b in enumerate(dst):
                flow[(a, b)] = self._var(f"g_{k}_{a_i}_{b_i}", 0)
        for a_i, a in enumerate(src):
            out = _ones(flow[(a, b)] for b in dst)
            self.prob.add(f"gs_{k}_{a_i}", _minus(out, _summed(src[a])), EQ)
        for b_i, b in enumerate(dst):
            into = _ones(flow[(a, b)] for a in src)
            self.prob.add(f"gd_{k}_{b_i}", _minus(into, _summed(dst[b])), EQ)
        usd = [(flow[key], c) for key, (c, _) in table.items() if c]
        hours = [(flow[key], h) for key, (_, h) in table.items() if h]
        return usd, 0.0, hours, 0.0

    def _regions(self, k, src, dst, table, blocks, regions) -> tuple[Terms, float, Terms, float]:
        src_regions = by_region(src, regions)
        dst_regions = by_region(dst, regions)
        usd: Terms = []
        hours: Terms = []
        flow = {}
        # Transfer time is usually the same between any two different places: then it is that
        # constant minus a same-place discount, and needs no flow terms at all.
        flat = {h for _, h in blocks.values()}
        apart = apart_hours(src_regions, dst_regions, blocks)
        if len(flat) > 1 and apart is not None:
            # Regions where the two tasks can only meet at one place: their block holds that
            # place's own price; price it like the others plus a same-place correction (the w
            # term below), so the hours stay one constant.
            blocks = dict(blocks)
            for a in src_regions:
                if (a, a) in blocks and not two_places(src_regions[a], dst_regions.get(a, ())):
                    blocks[(a, a)] = (blocks[(a, a)][0], apart)
            flat = {h for _, h in blocks.values()}
        hours_const = flat.pop() if len(flat) == 1 else 0.0
        if not flat:  # only prices differ between region pairs
            usd += self._discounts(k, src, dst, blocks, src_regions, dst_regions)
        else:
            for a_i, a in enumerate(src_regions):
                for b_i, b in enumerate(dst_regions):
                    x = flow[(a, b)] = self._var(f"f_{k}_{a_i}_{b_i}", 0)
                    c, h = blocks[(a, b)]
                    if c:
                        usd.append((x, c))
                    if h != hours_const:
                        hours.append((x, h))
            for a_i, (a, places) in enumerate(src_regions.items()):
                terms = [t for place in places for t in src[place]]
                out = _ones(flow[(a, b)] for b in dst_regions)
                self.prob.add(f"fs_{k}_{a_i}", _minus(out, _summed(terms)), EQ)
            for b_i, (b, places) in enumerate(dst_regions.items()):
                terms = [t for place in places for t in dst[place]]
                into = _ones(flow[(a, b)] for a in src_regions)
                self.prob.add(f"fd_{k}_{b_i}", _minus(into, _summed(terms)), EQ)
        for l_i, place in enumerate(src):
            if place not in dst:
                continue
            region = regions[place]
            off_c, off_h = blocks[(region, region)]
            c, h = table[(place, place)]
            if c == off_c and h == off_h:
                continue
            both = self._var(f"w_{k}_{l_i}", 0)
            mine, theirs = _summed(src[place]), _summed(dst[place])
            self.prob.add(f"wu_{k}_{l_i}", _minus({both: 1}, mine), LE)
            self.prob.add(f"wv_{k}_{l_i}", _minus({both: 1}, theirs), LE)
            if c > off_c or h > off_h:  # a same-place surcharge: w must not hide at 0
                self.prob.add(f"wl_{k}_{l_i}", _minus({both: 1}, mine, theirs), GE, 1)
            if c != off_c:
                usd.append((both, c - off_c))
            if h != off_h:
                hours.append((both, h - off_h))
        return usd, 0.0, hours, hours_const

    def _discounts(self, k, src, dst, blocks, src_regions, dst_regions) -> Terms:
        """The region-pair price of edge k, as "the source region's dearest price, minus a
        discount for the pair used" — with a variable only for pairs priced below that.

        y[A,B] in [0, 1] with sum over B of y[A,B] <= "u in A" and sum over A <= "v in B":
        at an integer point only the pair in use can be 1, and minimising sets it (exact); the
        LP relaxation is the full transportation problem's (a partial matching of discounts can
        always be completed with pairs of discount >= 0), but without a variable for every
        pair of regions — a catalog with many regions and few distinct prices (unlisted pairs
        are all priced alike) needs a few hundred per edge instead of regions squared.
        """
        usd: Terms = []
        into: dict[int, list[Var]] = {}
        for a_i, (a, places) in enumerate(src_regions.items()):
            dearest = max(blocks[(a, b)][0] for b in dst_regions)
            mine = [t for place in places for t in src[place]]
            if dearest:
                usd += [(x, dearest * w) for x, w in mine]
            pairs = []
            for b_i, b in enumerate(dst_regions):
                discount = dearest - blocks[(a, b)][0]
                if discount > 0:
                    y = self._var(f"y_{k}_{a_i}_{b_i}", 0)
                    usd.append((y, -discount))
                    pairs.append(y)
                    into.setdefault(b_i, []).append(y)
            if pairs:
                self.prob.add(f"ys_{k}_{a_i}", _minus(_ones(pairs), _summed(mine)), LE)
        for b_i, places in enumerate(dst_regions.values()):
            if b_i in into:
                theirs = [t for place in places for t in dst[place]]
                self.prob.add(f"yd_{k}_{b_i}", _minus(_ones(into[b_i]), _summed(theirs)), LE)
        return usd

    def _var(self, name: str, low: float | None = None, up: float | None = None) -> Var:
        return Var(name, low, up)

    # --- solving ---------------------------------------------------------------------------

    def use_time(self) -> None:
        """Add the makespan rows (once): minimising cost alone does not need them."""
        if not self.timed:
            for name, (coefs, constant) in self.timing.items():
                self.prob.add(name, coefs, GE, constant)
            self.timed = True

    def expression(self, which: str) -> Expr:
        if which == "time":
            self.use_time()
            return {self.makespan: 1.0}, 0.0
        return self.cost

    def bound(self, which: str, cap: float) -> None:
        """Keep `which` (cost or time) at most `cap` (plus tolerance) from now on."""
        limit = self.caps.get(which)
        if limit is None:
            limit = self.caps[which] = self._var(f"cap_{which}")
            coefs, constant = self.expression(which)
            self.prob.add(f"cap_{which}", _minus(coefs, {limit: 1}), LE, constant)
        limit.up = cap + tol(cap)

    def fix(self, v: int, i: int) -> None:
        for j in self.prep.alive[v]:
            x = self.var.get((v, j))
            if x is not None:
                x.low = x.up = 1 if j == i else 0

    def minimize(
        self,
        objective: Expr,
        base: list[int],
        *,
        value: Callable[[list[int]], float] | None = None,
        accept: Callable[[list[int]], bool] | None = None,
        integer: bool = False,
    ) -> list[int]:
        """Solve with `objective`; return `base` with this component's tasks filled in.

        With `accept` (does an assignment keep the caller's bounds?) and `value` (the
        objective of an assignment, computed in Python), the LP relaxation is solved first. Its
        optimum is a lower bound; rounding its one-hot values (off by solver noise at most
        ROUNDING_TOL: the flow rows make the relaxation integral on most placement problems)
        gives an assignment, which is an optimum of the ILP when `accept`ed and its value
        reaches the bound: below bound + 1 for an `integer` objective (rank positions: no
        integer point lies in between), within PRINTED_TOL of it otherwise (CBC prints values
        to 8 digits). CBC's branch-and-cut set-up, most of a solve's time on these models, is
        then skipped. Otherwise the ILP is solved.
        """
        self.prob.objective, self.prob.objective_constant = objective
        self.relaxed = None
        if accept is not None and value is not None:
            self._solve(mip=False)
            choice = self._choice(base)
            if self._near_integral() and accept(choice):
                bound = float(self.prob.objective_value() or 0.0)
                slack = 1.0 - 1e-6 if integer else PRINTED_TOL * max(1.0, abs(bound))
                if value(choice) < bound + slack:
                    self.relaxed = bound
                    return choice
        self._solve(mip=True, start=self._start(base))
        return self._choice(base)

    def _start(self, base: list[int]) -> dict[Var, float]:
        """`base` as values of the one-hot columns: a MIP start for CBC."""
        return {x: float(base[v] == i) for (v, i), x in self.var.items()}

    def _choice(self, base: list[int]) -> list[int]:
        choice = list(base)
        for v in self.tasks:
            alive = self.prep.alive[v]
            if len(alive) == 1:
                choice[v] = alive[0]
            else:
                values = [(self.var[(v, i)].value or 0.0, -n) for n, i in enumerate(alive)]
                choice[v] = alive[-max(values)[1]]
        return choice

    def _solve(self, *, mip: bool, start: dict[Var, float] | None = None) -> None:
        self.solves += 1
        self.prob.solve(mip=mip, start=start)

    def _near_integral(self) -> bool:
        return all(
            min(value, 1.0 - value) <= ROUNDING_TOL
            for value in (x.value or 0.0 for x in self.var.values())
        )

    def rank_objective(self, tasks: list[int]) -> Expr:
        """Rank positions of `tasks` weighted lexicographically (earlier tasks dominate)."""
        terms: Terms = []
        weight = 1
        for v in reversed(tasks):
            alive = self.prep.alive[v]
            terms += [(self.var[(v, i)], float(weight * n)) for n, i in enumerate(alive)]
            weight *= len(alive)
        return _summed(terms), 0.0

    def rank_value(self, tasks: list[int], choice: list[int]) -> float:
        """`rank_objective(tasks)` at an assignment."""
        total, weight = 0, 1
        for v in reversed(tasks):
            alive = self.prep.alive[v]
            total += weight * alive.index(choice[v])
            weight *= len(alive)
        return float(total)


def _ones(variables) -> Coefs:
    """PuLP's lpSum of variables: each with coefficient 1."""
    out: Coefs = {}
    for x in variables:
        out[x] = out.get(x, 0) + 1
    return out


def _summed(terms: Terms) -> Coefs:
    """Coefficients of a list of terms; repeated variables are summed."""
    summed: Coefs = {}
    for x, coefficient in terms:
        summed[x] = summed.get(x, 0.0) + coefficient
    return summed


def _minus(first: Coefs, *rest: Coefs) -> Coefs:
    """first - rest[0] - rest[1] ..., keys in PuLP's order (first's, then new ones)."""
    out = dict(first)
    for coefs in rest:
        for x, coefficient in coefs.items():
            out[x] = out[x] + -coefficient if x in out else -coefficient
    return out
