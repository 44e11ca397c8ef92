"""Cost limits a plan must respect (`skyform plan --max-hourly-cost / --max-total-cost`).

- max hourly: the plan's hourly cost once applied (every cluster it places, `hourly_after`);
- max total: the plan's estimated total (compute over the estimated hours, plus egress).
A violation carries the limit, the plan's figure and the clusters behind it, most expensive
first. A destroy plan never violates a limit (it only lowers cost).
"""

from __future__ import annotations

from dataclasses import dataclass

from skyform.plan.model import Plan


@dataclass(frozen=True)
class Violation:
    option: str  # the CLI option whose limit is exceeded
    hourly: bool  # True: $/h figures; False: dollars
    limit: float
    actual: float
    clusters: tuple[tuple[str, float], ...]  # (cluster, its figure), most expensive first
    egress: float = 0.0  # part of `actual` that is egress (total limit only)


def policy_violations(
    plan: Plan, *, max_hourly: float | None = None, max_total: float | None = None
) -> list[Violation]:
    if plan.destroy:
        return []
    s = plan.summary
    found = []
    if max_hourly is not None and s.hourly_after > max_hourly:
        found.append(
            Violation(
                option="--max-hourly-cost",
                hourly=True,
                limit=max_hourly,
                actual=s.hourly_after,
                clusters=_ranked((t.cluster, t.hourly_cost) for t in plan.tasks),
            )
        )
    if max_total is not None and s.estimated_cost > max_total:
        found.append(
            Violation(
                option="--max-total-cost",
                hourly=False,
                limit=max_total,
                actual=s.estimated_cost,
                clusters=_ranked((t.cluster, t.estimated_cost) for t in plan.tasks),
                egress=s.egress_cost,
            )
        )
    return found


def _ranked(pairs) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(pairs, key=lambda p: (-p[1], p[0])))
