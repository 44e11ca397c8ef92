"""The cost report (ops/cost.py's `usage`, the numbers `skyform cost-report` prints) cut per
day and per cluster for the dashboard's charts (pure)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from skyform.cost.model import UsageReport


def per_cluster(report: UsageReport) -> list[tuple[str, float]]:
    return sorted(((row.name, row.cost) for row in report.clusters), key=lambda p: -p[1])


def per_day(report: UsageReport) -> list[tuple[str, float]]:
    """Each interval's cost spread over the UTC days it covers, in proportion to its seconds
    inside the report window."""
    days: dict[str, float] = defaultdict(float)
    start_of_window = report.since or 0.0
    for row in report.clusters:
        for iv in row.intervals:
            begin = max(iv.started_at, start_of_window)
            end = iv.ended_at if iv.ended_at is not None else report.now
            end = min(end, report.now)
            if end <= begin or iv.seconds <= 0:
                continue
            rate = iv.cost / (end - begin)
            t = begin
            while t < end:
                day = dt.datetime.fromtimestamp(t, dt.timezone.utc).date()
                next_day = dt.datetime.combine(
                    day + dt.timedelta(days=1), dt.time(), tzinfo=dt.timezone.utc
                ).timestamp()
                upto = min(end, next_day)
                days[day.isoformat()] += rate * (upto - t)
                t = upto
    return sorted(days.items())
