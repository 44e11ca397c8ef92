"""`skyform cost-report`: what clusters and managed jobs actually cost.

Cost = the hourly price recorded when the cluster was applied × nodes × recorded uptime, summed
over usage intervals. Prices are never looked up again (a refreshed catalog or a changed pool
price does not move the report). An open interval counts up to `now`. With a window (`since`),
only the uptime inside it counts. A cluster's intervals outlive it: a terminated cluster is
still reported. Managed jobs are grouped by `managed_job_id`; a recovery onto a new cluster is
a new interval. A job's #RECOVERIES is the managed job's own count (ManagedJobRecord.recoveries,
the same number `jobs queue` shows), not a count of intervals.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from skyform.cost.model import IntervalCost, UsageReport, UsageRow
from skyform.plan.model import money
from skyform.state.models import UsageInterval

TERMINATED = "TERMINATED"


def interval_cost(iv: UsageInterval, *, now: float, since: float | None) -> IntervalCost:
    start = iv.started_at if since is None else max(iv.started_at, since)
    end = iv.ended_at if iv.ended_at is not None else now
    seconds = max(0.0, end - start)
    hourly = money(iv.hourly_price * iv.num_nodes)
    return IntervalCost(
        id=iv.id,
        cluster=iv.cluster,
        offer=iv.offer,
        num_nodes=iv.num_nodes,
        hourly_cost=hourly,
        started_at=iv.started_at,
        ended_at=iv.ended_at,
        seconds=seconds,
        cost=hourly * seconds / 3600.0,
        managed_job_id=iv.managed_job_id,
        reason=iv.reason,
    )


def _row(
    name: str,
    costs: list[IntervalCost],
    status: str,
    managed_job_id: int | None = None,
    recoveries: int = 0,
) -> UsageRow:
    latest = costs[-1]
    return UsageRow(
        name=name,
        managed_job_id=managed_job_id,
        launched_at=min(c.started_at for c in costs),
        seconds=sum(c.seconds for c in costs),
        offer=latest.offer,
        num_nodes=latest.num_nodes,
        status=status,
        hourly_cost=latest.hourly_cost,
        cost=sum(c.cost for c in costs),
        recoveries=recoveries,
        intervals=costs,
    )


def _cluster_status(costs: list[IntervalCost], live: Mapping[str, str]) -> str:
    latest = costs[-1]
    if latest.ended_at is None:
        return live.get(latest.cluster, "UP")
    return TERMINATED


def usage_report(
    intervals: Iterable[UsageInterval],
    *,
    now: float,
    since: float | None = None,
    cluster_status: Mapping[str, str] | None = None,
    job_names: Mapping[int, str] | None = None,
    job_status: Mapping[int, str] | None = None,
    job_recoveries: Mapping[int, int] | None = None,
) -> UsageReport:
    """`cluster_status`: live clusters' statuses by name (from state); `job_names`,
    `job_status` and `job_recoveries`: what is known about managed jobs by id (missing ones
    are named after their first cluster, their status follows their latest cluster, and no
    recovery is known of them)."""
    live = cluster_status or {}
    names = job_names or {}
    statuses = job_status or {}
    kept = [iv for iv in intervals if since is None or iv.ended_at is None or iv.ended_at >= since]
    costs = [interval_cost(iv, now=now, since=since) for iv in sorted(kept, key=_order)]
    by_cluster: dict[str, list[IntervalCost]] = {}
    by_job: dict[int, list[IntervalCost]] = {}
    for c in costs:
        by_cluster.setdefault(c.cluster, []).append(c)
        if c.managed_job_id is not None:
            by_job.setdefault(c.managed_job_id, []).append(c)
    clusters = [
        _row(name, group, _cluster_status(group, live)) for name, group in by_cluster.items()
    ]
    jobs = [
        _row(
            names.get(job_id, group[0].cluster),
            group,
            statuses.get(job_id, _cluster_status(group, live)),
            managed_job_id=job_id,
            recoveries=(job_recoveries or {}).get(job_id, 0),
        )
        for job_id, group in sorted(by_job.items())
    ]
    clusters.sort(key=lambda r: (r.launched_at, r.name))
    return UsageReport(
        now=now,
        since=since,
        clusters=clusters,
        managed_jobs=jobs,
        total_cost=sum(c.cost for c in costs),
    )


def _order(iv: UsageInterval) -> tuple[float, int]:
    return (iv.started_at, iv.id)
