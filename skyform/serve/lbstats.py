"""The load balancer's traffic as a time series in the state store (service_stats).

Every window (10 s; SKYFORM_SERVE_STATS_WINDOW shortens it), the controller reads the LB's
`/metrics` (cumulative counts: requests by status code, the latency histogram) and records
what changed since the last reading as one row: requests, the 5xx answers among them, and
the latency's p50 and p95 in milliseconds, interpolated within the histogram's buckets as
Prometheus' histogram_quantile does. Windows start on multiples of the window length, so
rows of several services line up. A day of windows is kept per service.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from skyform.errors import SkyformError
from skyform.serve import state
from skyform.serve.controller_base import interval, log
from skyform.serve.lb.metrics import BUCKETS
from skyform.state.services import StatsWindow

KEEP_SECONDS = 24 * 3600.0
SCRAPE_TIMEOUT = 2.0
_SAMPLE = re.compile(r"^(\w+)\{([^}]*)\}\s+(\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Counts:
    """The LB's cumulative counts at one reading."""

    by_code: dict[int, int]
    buckets: tuple[int, ...]  # per bucket (not cumulative), the last one +Inf

    @property
    def total(self) -> int:
        return sum(self.by_code.values())


ZERO = Counts({}, (0,) * (len(BUCKETS) + 1))


def parse_metrics(text: str) -> Counts:
    """The request and latency counts of the LB's `/metrics` text."""
    by_code: dict[int, int] = {}
    cumulative: dict[float, int] = {}
    for line in text.splitlines():
        found = _SAMPLE.match(line.strip())
        if found is None:
            continue
        labels = dict(_LABEL.findall(found[2]))
        value = int(float(found[3]))
        if found[1] == "skyform_lb_requests_total" and labels.get("code", "").isdigit():
            by_code[int(labels["code"])] = value
        elif found[1] == "skyform_lb_request_duration_seconds_bucket" and "le" in labels:
            bound = math.inf if labels["le"] == "+Inf" else float(labels["le"])
            cumulative[bound] = value
    bounds = (*BUCKETS, math.inf)
    running = [cumulative.get(float(b), 0) for b in bounds]
    per_bucket = tuple(max(0, n - (running[i - 1] if i else 0)) for i, n in enumerate(running))
    return Counts(by_code, per_bucket)


def window_of(
    name: str, start: float, seconds: float, before: Counts, after: Counts
) -> StatsWindow:
    """What happened between two readings (the LB restarted when counts went down: then
    everything it counted is new)."""
    if after.total < before.total:
        before = ZERO
    codes = {c: n - before.by_code.get(c, 0) for c, n in after.by_code.items()}
    buckets = [max(0, a - b) for a, b in zip(after.buckets, before.buckets, strict=True)]
    return StatsWindow(
        service=name,
        window_start=start,
        window_seconds=seconds,
        requests=sum(codes.values()),
        errors=sum(n for c, n in codes.items() if c >= 500),
        p50_ms=quantile_ms(0.5, buckets),
        p95_ms=quantile_ms(0.95, buckets),
    )


def quantile_ms(q: float, buckets: list[int]) -> float | None:
    """The q-quantile of a histogram's per-bucket counts, linear within its bucket (the
    +Inf bucket answers its lower bound); None when it counted nothing."""
    total = sum(buckets)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for i, n in enumerate(buckets):
        if n and seen + n >= rank:
            lower = BUCKETS[i - 1] if i else 0.0
            if i >= len(BUCKETS):
                return lower * 1000.0
            return (lower + (BUCKETS[i] - lower) * (rank - seen) / n) * 1000.0
        seen += n
    return BUCKETS[-1] * 1000.0


class LbStats:
    """Reads the LB every window and records the window's row (the controller's loop)."""

    def __init__(self, name: str) -> None:
        import time

        self.name = name
        self.seconds = interval("SKYFORM_SERVE_STATS_WINDOW", 10.0)
        self.start = math.floor(time.time() / self.seconds) * self.seconds
        self.last = ZERO

    async def maybe_record(self, http: Any, control_port: int | None, now: float) -> None:
        if control_port is None or now < self.start + self.seconds:
            return
        import aiohttp

        url = f"http://127.0.0.1:{control_port}/metrics"
        try:
            timeout = aiohttp.ClientTimeout(total=SCRAPE_TIMEOUT)
            async with http.get(url, timeout=timeout) as resp:
                counts = parse_metrics(await resp.text())
        except Exception as exc:  # aiohttp's and asyncio's errors: the next window reads
            log.info("the load balancer's metrics could not be read (%r)", exc)
            return
        end = math.floor(now / self.seconds) * self.seconds  # a late reading: a longer window
        window = window_of(self.name, self.start, end - self.start, self.last, counts)
        self.last, self.start = counts, end
        try:
            state.store().add_window(window, keep_seconds=KEEP_SECONDS)
        except SkyformError as exc:  # the store is away: this window is lost, serving is not
            log.warning("the load balancer's traffic was not recorded: %s", exc.message)
