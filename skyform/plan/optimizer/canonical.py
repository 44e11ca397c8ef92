"""The ILP path of `solve`: optimum first, then the canonical assignment among the optima.

1. Minimise the primary objective (unless capped), bound it; minimise the secondary (unless
   capped), bound it.
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

from skyform.plan.optimizer.ilp import PlacementIlp
from skyform.plan.optimizer.prepared import Prepared
from skyform.plan.optimizer.problem import tol

LEX_LIMIT = 100_000


def lexmin_ilp(
    prep: Prepared,
    comp: list[int],
    base: list[int],
    p_cap: float | None = None,
    s_cap: float | None = None,
) -> list[int]:
    model = PlacementIlp(prep, comp)
    primary, secondary = ("cost", "time") if prep.objective == "cost" else ("time", "cost")
    caps: dict[str, float] = {}
    for which, cap in ((primary, p_cap), (secondary, s_cap)):
        if cap is not None:
            model.bound(which, cap)
            caps[which] = cap
    incumbent = list(base)
    try:
        for which, cap in ((primary, p_cap), (secondary, s_cap)):
            if cap is None:
                trial = model.minimize(
                    model.expression(which),
                    incumbent,
                    value=partial(_value, prep, comp, which),
                    accept=partial(_fits_caps, prep, comp, caps),
                )
                if _fits(prep, comp, trial, caps):
                    incumbent = trial
                caps[which] = _values(prep, incumbent, comp)[which]
                model.bound(which, caps[which])
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
            trial = model.minimize(
                model.rank_objective(batch),
                incumbent,
                value=partial(model.rank_value, batch),
                accept=partial(_fits_caps, prep, comp, caps),
                integer=True,
            )
            if _fits(prep, comp, trial, caps):
                incumbent = trial
            for u in batch:
                model.fix(u, incumbent[u])
            at += len(batch)
    finally:
        prep.ilp_solves += model.solves
    return incumbent


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
