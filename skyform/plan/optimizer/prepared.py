"""A Problem turned into flat per-task numbers the solvers share, plus the candidate order.

- `cost[v][i]`: compute cost + the egress cost of pulling v's anchored inputs to candidate i;
- `dur[v][i]`: the hours of pulling those inputs + the candidate's run hours;
- `unary(v, i)`: (primary, secondary) contribution of the candidate on its own;
- `rank[v]`: candidate indices in the documented total order (see the package docstring);
- `alive[v]`: the candidates still in play after pruning, in rank order;
- `place[v][i]`: index into `places` (distinct Locations, interned so lookups hash ints);
- `regions[p]`: the (cloud, region) of place p, for the models priced by region;
- `move(a, b, gb)`: (USD, hours) between two place indices, cached.
"""

from __future__ import annotations

from skyform.plan.catalog.offer import Location
from skyform.plan.optimizer.problem import SECONDS_PER_HOUR, Problem


class Prepared:
    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.objective = problem.objective
        self.n = n = len(problem.tasks)
        self.order = problem.order()
        self.edges = [(e.src, e.dst, float(e.gigabytes)) for e in problem.edges]
        self.parents: list[list[int]] = [[] for _ in range(n)]  # edge indices into self.edges
        self.children: list[list[int]] = [[] for _ in range(n)]
        for k, (u, v, _) in enumerate(self.edges):
            self.children[u].append(k)
            self.parents[v].append(k)
        self.places: list[Location] = []
        self.regions: list[tuple[str, str | None]] = []  # (cloud, region) of places[p]
        self._place_index: dict[Location, int] = {}
        self._moves: dict[float, dict[int, dict[int, tuple[float, float]]]] = {}  # gb, a, b
        self.ilp_solves = 0  # counted for Solution.stats
        anchors: list[list] = [[] for _ in range(n)]
        for anchor in problem.anchors:
            if anchor.gigabytes > 0:
                anchors[anchor.task].append((self.intern(anchor.location), anchor.gigabytes))
        self.loc: list[list[Location]] = []
        self.place: list[list[int]] = []
        self.cost: list[list[float]] = []
        self.dur: list[list[float]] = []
        for v, task in enumerate(problem.tasks):
            locs, places, costs, durs = [], [], [], []
            for cand in task.candidates:
                where = cand.offer.location
                at = self.intern(where)
                extra_cost = extra_hours = 0.0
                for source, gb in anchors[v]:
                    usd, hours = self.move(source, at, gb)
                    extra_cost += usd
                    extra_hours += hours
                locs.append(where)
                places.append(at)
                costs.append(cand.cost + extra_cost)
                durs.append(extra_hours + cand.hours)
            self.loc.append(locs)
            self.place.append(places)
            self.cost.append(costs)
            self.dur.append(durs)
        self.rank = [self._ranked(v) for v in range(n)]
        self.pos = [[0] * len(problem.tasks[v].candidates) for v in range(n)]
        for v in range(n):
            for position, i in enumerate(self.rank[v]):
                self.pos[v][i] = position
        self.alive = [list(r) for r in self.rank]

    # --- the total order -------------------------------------------------------------------

    def unary(self, v: int, i: int) -> tuple[float, float]:
        if self.objective == "cost":
            return self.cost[v][i], self.dur[v][i]
        return self.dur[v][i], self.cost[v][i]

    def rank_key(self, v: int, i: int) -> tuple:
        cand = self.problem.tasks[v].candidates[i]
        o = cand.offer
        p, s = self.unary(v, i)
        return (
            p,
            s,
            o.hourly_price,
            o.cloud,
            o.region,
            o.zone or "",
            o.instance_type,
            o.spot,
            o.accelerator or "",
            o.accelerator_count,
            o.context or "",
            cand.num_nodes,
            cand.hours,
            cand.group,
            cand.request,
            i,
        )

    def _ranked(self, v: int) -> list[int]:
        count = len(self.problem.tasks[v].candidates)
        return sorted(range(count), key=lambda i: self.rank_key(v, i))

    # --- data movement ---------------------------------------------------------------------

    def intern(self, where: Location) -> int:
        found = self._place_index.get(where)
        if found is None:
            found = self._place_index[where] = len(self.places)
            self.places.append(where)
            self.regions.append((where.cloud, where.region))
        return found

    def move(self, a: int, b: int, gb: float) -> tuple[float, float]:
        """(USD, hours) to move `gb` GB from place a to place b."""
        if gb <= 0 or self.problem.egress is None:
            return 0.0, 0.0
        try:  # (pruning asks millions of times on a big catalog: two int-keyed lookups)
            return self._moves[gb][a][b]
        except KeyError:
            moved = self.problem.egress(self.places[a], self.places[b], gb)
            found = (float(moved.cost), float(moved.seconds) / SECONDS_PER_HOUR)
            self._moves.setdefault(gb, {}).setdefault(a, {})[b] = found
            return found

    def moves_from(self, a: int, gb: float, targets: list[int]) -> list[tuple[float, float]]:
        """`move(a, b, gb)` for each b of `targets` (the cached ones without a call each)."""
        if gb <= 0 or self.problem.egress is None:
            return [(0.0, 0.0)] * len(targets)
        known = self._moves.get(gb, {}).get(a, {})
        return [known.get(b) or self.move(a, b, gb) for b in targets]

    def moves_to(self, b: int, gb: float, sources: list[int]) -> list[tuple[float, float]]:
        """`move(a, b, gb)` for each a of `sources`."""
        if gb <= 0 or self.problem.egress is None:
            return [(0.0, 0.0)] * len(sources)
        known = self._moves.get(gb, {})
        return [known.get(a, {}).get(b) or self.move(a, b, gb) for a in sources]

    def transfer(self, a: Location, b: Location, gb: float) -> tuple[float, float]:
        return self.move(self.intern(a), self.intern(b), gb)

    def edge_transfer(self, k: int, i: int, j: int) -> tuple[float, float]:
        """(USD, hours) on edge k when its source takes candidate i and its target j."""
        u, v, gb = self.edges[k]
        return self.move(self.place[u][i], self.place[v][j], gb)

    # --- scoring an assignment --------------------------------------------------------------

    def score(self, choice, tasks: list[int] | None = None) -> tuple[float, float]:
        """(total cost, makespan) of an assignment (choice[v] = candidate index), over all
        tasks or over `tasks` (whole components, in topological order)."""
        tasks = self.order if tasks is None else tasks
        total = 0.0
        makespan = 0.0
        finish = [0.0] * self.n
        cost, dur, edges, parents, place = self.cost, self.dur, self.edges, self.parents, self.place
        for v in tasks:
            mine = choice[v]
            total += cost[v][mine]
            start = 0.0
            for k in parents[v]:
                u, _, gb = edges[k]
                usd, hours = self.move(place[u][choice[u]], place[v][mine], gb)
                total += usd
                if finish[u] + hours > start:
                    start = finish[u] + hours
            end = finish[v] = start + dur[v][mine]
            if end > makespan:
                makespan = end
        return total, makespan

    def pair(self, cost: float, makespan: float) -> tuple[float, float]:
        """(primary, secondary) from (cost, makespan)."""
        return (cost, makespan) if self.objective == "cost" else (makespan, cost)
