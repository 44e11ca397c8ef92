"""The ILP path of `solve`: optimum first, then the canonical assignment among the optima.

1. Minimise the primary objective (unless capped), bound it; minimise the secondary (unless
   capped), bound it.
2. Walk the component's tasks in topological order. For each task, try its candidates that
   come before the current one in rank order by moving only that task (checked in Python); if
   the task is still not on its first candidate, ask CBC for the smallest rank position it can
   take with every bound kept and every earlier task fixed. Then fix the task.
Every answer CBC gives is re-scored in Python and kept only if it honours the bounds, so solver
tolerances can make the result less canonical but never worse.
"""

from __future__ import annotations

from skyform.plan.optimizer.ilp import PlacementIlp
from skyform.plan.optimizer.prepared import Prepared
from skyform.plan.optimizer.problem import tol


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
                incumbent = model.minimize(model.expression(which), incumbent)
                caps[which] = _values(prep, incumbent, comp)[which]
                model.bound(which, caps[which])
        for v in comp:
            alive = prep.alive[v]
            if len(alive) == 1:
                continue
            if incumbent[v] != alive[0]:
                incumbent = _single_move(prep, comp, incumbent, v, caps)
            if incumbent[v] != alive[0]:
                trial = model.minimize(model.rank_objective(v), incumbent)
                if _fits(prep, comp, trial, caps):
                    incumbent = trial
            model.fix(v, incumbent[v])
    finally:
        prep.ilp_solves += model.solves
    return incumbent


def _values(prep: Prepared, choice: list[int], comp: list[int]) -> dict[str, float]:
    cost, span = prep.score(choice, comp)
    return {"cost": cost, "time": span}


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
