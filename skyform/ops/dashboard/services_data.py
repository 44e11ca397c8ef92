"""Every read the dashboard makes of services, in one module: their records (with replicas),
their revisions, and their traffic over time.

Traffic comes from the state store's `service_stats` (serve/lbstats.py): every window (10 s)
the service's controller records the requests its load balancer answered and their p50 and
p95 latency, kept for a day. So every home that shares the store draws the same series, and
it is there whether or not a dashboard was running when the traffic came.
"""

from __future__ import annotations

import time

from skyform.errors import SkyformError
from skyform.ops.serve.service import statuses
from skyform.serve import state
from skyform.serve.revisions import ServiceRevision, load_all
from skyform.state.services import StatsWindow

SHOWN_SECONDS = 3600.0  # the charts' span: the last hour of windows


def services() -> list[state.ServiceRecord]:
    try:
        return statuses([])
    except SkyformError:
        return []  # one removed while listing: the next poll shows the rest


def service(name: str) -> state.ServiceRecord | None:
    if name not in state.list_services():
        return None
    try:
        return statuses([name])[0]
    except SkyformError:
        return None


def revisions(name: str) -> list[ServiceRevision]:
    return load_all(name)


def windows(name: str, now: float | None = None) -> list[StatsWindow]:
    """The service's traffic windows of the last hour, oldest first."""
    now = time.time() if now is None else now
    try:
        return state.store().windows(name, since=now - SHOWN_SECONDS)
    except SkyformError:
        return []


def requests_per_second(rows: list[StatsWindow]) -> list[tuple[float, float]]:
    """(end of window, requests per second in it)."""
    return [
        (w.window_start + w.window_seconds, w.requests / w.window_seconds)
        for w in rows
        if w.window_seconds > 0
    ]


def latency_ms(rows: list[StatsWindow], which: str = "p50") -> list[tuple[float, float]]:
    """(end of window, its p50 or p95 latency in ms) for windows that answered requests."""
    out = []
    for w in rows:
        value = w.p50_ms if which == "p50" else w.p95_ms
        if value is not None:
            out.append((w.window_start + w.window_seconds, value))
    return out
