"""The cost report (ops/cost.py's `usage`, the numbers `skyform cost-report` prints) cut per
day and per cluster for the dashboard's charts (pure)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from skyform.cost.model import UsageReport

DAY = 86400


def per_cluster(report: UsageReport) -> list[tuple[str, float]]:
    return sorted(((row.name, row.cost) for row in report.clusters), key=lambda p: -p[1])


def per_day(report: UsageReport) -> list[tuple[str, float]]:
    """Each interval's cost spread over the UTC days it covers, in proportion to its seconds
    inside the report window (day arithmetic on epoch seconds: UTC days have no leap)."""
    days: dict[int, float] = defaultdict(float)
    start_of_window = report.since or 0.0
    for row in report.clusters:
        for iv in row.intervals:
            begin = max(iv.started_at, start_of_window)
            end = min(iv.ended_at if iv.ended_at is not None else report.now, report.now)
            if end <= begin or iv.seconds <= 0:
                continue
            rate = iv.cost / (end - begin)
            t = begin
            while t < end:
                day = int(t // DAY)
                upto = min(end, (day + 1) * DAY)
                days[day] += rate * (upto - t)
                t = upto
    return [
        (dt.datetime.fromtimestamp(day * DAY, dt.timezone.utc).date().isoformat(), cost)
        for day, cost in sorted(days.items())
    ]
