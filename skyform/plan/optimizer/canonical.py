"""The ILP path of `solve`: optimum first, then the canonical assignment among the optima.

1. Minimise the primary objective (unless capped), bound it; minimise the secondary (unless
   capped), bound it. After each LP solve whose rounding is optimal, the candidates whose
   reduced cost is positive are in no optimum and leave (reduced-cost fixing): the rest runs on
   a model rebuilt from what is left, or by enumeration once few assignments remain — on a
   20-task DAG over a big catalog a few thousand candidates become a few dozen.
2. Walk the component's tasks in topological order. For each task, try its candidates that
   come before the current one in rank order by moving only that task (checked in Python); if
   the task is still not on its first candidate, ask CBC for the smallest rank position it can
   take with every bound kept and every earlier task fixed — for it and the next few tasks at
   once, with lexicographic integer weights small enough for CBC to be exact. Then fix them.
Every answer CBC gives is re-scored in Python and kept only if it honours the bounds, so solver
tolerances can make the result less canonical but never worse.
"""

from __future__ import annotations

from functools import partial
from math import prod

from skyform.plan.optimizer.brute import ENUMERATE_LIMIT, lexmin_enumerate
from skyform.plan.optimizer.ilp import ROUNDING_TOL, PlacementIlp
from skyform.plan.optimizer.prepared import Prepared
from skyform.plan.optimizer.problem import tol

LEX_LIMIT = 100_000
DJ_TOL = 1e-5  # relative: reduced costs at most this are taken as zero (solver noise)


def lexmin_ilp(
    prep: Prepared,
    comp: list[int],
    base: list[int],
    p_cap: float | None = None,
    s_cap: float | None = None,
) -> list[int]:
    saved = {v: prep.alive[v] for v in comp}
    try:
        return _lexmin(prep, comp, base, p_cap, s_cap)
    finally:  # the narrowing holds for these bounds only: a later pass may relax them
        for v, alive in saved.items():
            prep.alive[v] = alive


def _lexmin(
    prep: Prepared, comp: list[int], base: list[int], p_cap: float | None, s_cap: float | None
) -> list[int]:
    primary, secondary = ("cost", "time") if prep.objective == "cost" else ("time", "cost")
    caps: dict[str, float] = {}
    for which, cap in ((primary, p_cap), (secondary, s_cap)):
        if cap is not None:
            caps[which] = cap
    model = _Model(prep, comp, caps)
    incumbent = list(base)
    try:
        for which, cap in ((primary, p_cap), (secondary, s_cap)):
            if cap is None:
                trial = model.get().minimize(
                    model.get().expression(which),
                    incumbent,
                    value=partial(_value, prep, comp, which),
                    accept=partial(_fits_caps, prep, comp, caps),
                )
                if _fits(prep, comp, trial, caps):
                    incumbent = trial
                caps[which] = _values(prep, incumbent, comp)[which]
                model.get().bound(which, caps[which])
                if not _narrow(prep, comp, optimal_support(model.get())):
                    continue
                if prod(len(prep.alive[v]) for v in comp) <= ENUMERATE_LIMIT:
                    return lexmin_enumerate(
                        prep, comp, prep.alive, caps.get(primary), caps.get(secondary), incumbent
                    )
                prep.ilp_solves += model.solves()
                model = _Model(prep, comp, caps)  # smaller: the rest only needs the optima
        pending = [v for v in comp if len(prep.alive[v]) > 1]
        at = 0
        while at < len(pending):
            v = pending[at]
            first = prep.alive[v][0]
            if incumbent[v] != first:
                incumbent = _single_move(prep, comp, incumbent, v, caps)
            if incumbent[v] == first:
                model.fix(v, first)
                at += 1
                continue
            batch = _batch(prep, pending, at)
            ilp = model.get()
            trial = ilp.minimize(
                ilp.rank_objective(batch),
                incumbent,
                value=partial(ilp.rank_value, batch),
                accept=partial(_fits_caps, prep, comp, caps),
                integer=True,
            )
            if _fits(prep, comp, trial, caps):
                incumbent = trial
            for u in batch:
                model.fix(u, incumbent[u])
            at += len(batch)
    finally:
        prep.ilp_solves += model.solves()
    return incumbent


class _Model:
    """The component's ILP, built on first use (often the narrowed candidates go to
    enumeration or need no further solve): then the bounds and fixes so far are applied."""

    def __init__(self, prep: Prepared, comp: list[int], caps: dict[str, float]) -> None:
        self.prep = prep
        self.comp = comp
        self.caps = dict(caps)
        self.fixed: list[tuple[int, int]] = []
        self.built: PlacementIlp | None = None

    def get(self) -> PlacementIlp:
        if self.built is None:
            self.built = PlacementIlp(self.prep, self.comp)
            for which, cap in self.caps.items():
                self.built.bound(which, cap)
            for v, i in self.fixed:
                self.built.fix(v, i)
        return self.built

    def fix(self, v: int, i: int) -> None:
        if self.built is None:
            self.fixed.append((v, i))
        else:
            self.built.fix(v, i)

    def solves(self) -> int:
        return 0 if self.built is None else self.built.solves


def _narrow(prep: Prepared, comp: list[int], support: dict[int, list[int]] | None) -> bool:
    """Keep only the candidates that can be in an optimum so far; True when some went."""
    if support is None or all(len(support[v]) == len(prep.alive[v]) for v in comp):
        return False
    for v in comp:
        prep.alive[v] = support[v]
    return True


def optimal_support(model: PlacementIlp) -> dict[int, list[int]] | None:
    """After `model.minimize` returned the LP relaxation's optimum: per task, the candidates
    that can be in an optimum of that objective under the current bounds (None: the last
    solve was not an LP whose rounding was optimal).

    Reduced-cost fixing: with an optimal dual, every feasible point costs at least the
    LP optimum + dj * x for a candidate's variable x at 0 with reduced cost dj > 0, so
    when the rounded LP point is optimal, a candidate with dj > 0 is in no optimum.
    DJ_TOL keeps every candidate whose dj solver noise could have made positive.
    """
    if model.relaxed is None:
        return None
    limit = DJ_TOL * max(1.0, abs(model.relaxed))
    support: dict[int, list[int]] = {}
    for v in model.tasks:
        alive = model.prep.alive[v]
        if len(alive) == 1:
            support[v] = list(alive)
            continue
        support[v] = [
            i
            for i in alive
            if (model.var[(v, i)].value or 0.0) > ROUNDING_TOL
            or (model.var[(v, i)].dj or 0.0) <= limit
        ]
    return support


def _batch(prep: Prepared, pending: list[int], at: int) -> list[int]:
    """Tasks from pending[at] on whose rank positions one solve can order lexicographically:
    the weights (products of list lengths) stay at most LEX_LIMIT, where CBC is exact."""
    batch = [pending[at]]
    size = len(prep.alive[pending[at]])
    for v in pending[at + 1 :]:
        size *= len(prep.alive[v])
        if size > LEX_LIMIT:
            break
        batch.append(v)
    return batch


def _values(prep: Prepared, choice: list[int], comp: list[int]) -> dict[str, float]:
    cost, span = prep.score(choice, comp)
    return {"cost": cost, "time": span}


def _value(prep: Prepared, comp: list[int], which: str, choice: list[int]) -> float:
    return _values(prep, choice, comp)[which]


def _fits_caps(prep: Prepared, comp: list[int], caps: dict[str, float], choice: list[int]) -> bool:
    return _fits(prep, comp, choice, caps)


def _fits(prep: Prepared, comp: list[int], choice: list[int], caps: dict[str, float]) -> bool:
    values = _values(prep, choice, comp)
    return all(values[which] <= cap + tol(cap) for which, cap in caps.items())


def _single_move(
    prep: Prepared, comp: list[int], choice: list[int], v: int, caps: dict[str, float]
) -> list[int]:
    """`choice` with v moved to its earliest candidate that keeps every bound, if any."""
    current = choice[v]
    for i in prep.alive[v]:
        if i == current:
            break
        trial = list(choice)
        trial[v] = i
        if _fits(prep, comp, trial, caps):
            return trial
    return choice
