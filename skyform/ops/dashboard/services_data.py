"""Every read the dashboard makes of services, in one module: their records (with replicas),
their revisions, and their traffic over time. Services are moving into the state store; when
they do, only this module changes.

Traffic: requests per second come from the load balancer's per-second request log
(`requests.log` in the service's folder, serve/lb/requestlog.py), which covers the last ten
minutes. Latency is not recorded over time anywhere: the load balancer exposes a cumulative
histogram on its control port (`/metrics`, serve/lb/metrics.py). The dashboard samples it
each time a service page asks for its series, and draws the mean latency between samples;
that series starts when the dashboard first looks and lives in this process only.
"""

from __future__ import annotations

import itertools
import threading
import time
import urllib.request
from dataclasses import dataclass

from skyform.errors import SkyformError
from skyform.ops.serve.service import statuses
from skyform.serve import state
from skyform.serve.lb.requestlog import read_counts
from skyform.serve.revisions import ServiceRevision, load_all

WINDOW_SECONDS = 600  # what requests.log keeps
MAX_SAMPLES = 600


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


def requests_per_second(name: str, now: float | None = None) -> list[tuple[float, float]]:
    """(second, requests) over the last ten minutes; seconds without traffic are zeros."""
    now = time.time() if now is None else now
    counts = dict(read_counts(state.service_dir(name) / "requests.log"))
    if not counts:
        return []
    first = max(min(counts), int(now) - WINDOW_SECONDS)
    return [(float(s), float(counts.get(s, 0))) for s in range(first, int(now))]


@dataclass(frozen=True)
class LatencySample:
    at: float
    count: int
    seconds: float  # the histogram's sum


_samples: dict[str, list[LatencySample]] = {}
_lock = threading.Lock()


def _scrape(port: int, service_name: str) -> LatencySample | None:
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        with urllib.request.urlopen(url, timeout=1) as reply:
            text = reply.read(1 << 20).decode(errors="replace")
    except OSError:
        return None
    count, total = None, None
    for line in text.splitlines():
        if line.startswith("skyform_lb_request_duration_seconds_count"):
            count = int(float(line.rsplit(" ", 1)[1]))
        elif line.startswith("skyform_lb_request_duration_seconds_sum"):
            total = float(line.rsplit(" ", 1)[1])
    if count is None or total is None:
        return None
    return LatencySample(time.time(), count, total)


def mean_latency_ms(record: state.ServiceRecord) -> list[tuple[float, float]]:
    """Sample the load balancer now; (time, mean latency in ms of the requests answered
    since the previous sample), for the samples this process took."""
    if record.control_port:
        sample = _scrape(record.control_port, record.name)
        if sample is not None:
            with _lock:
                kept = _samples.setdefault(record.name, [])
                if kept and sample.count < kept[-1].count:
                    kept.clear()  # a new load balancer: its counters started again
                kept.append(sample)
                del kept[:-MAX_SAMPLES]
    with _lock:
        kept = list(_samples.get(record.name, []))
    out = []
    for before, after in itertools.pairwise(kept):
        n = after.count - before.count
        if n > 0:
            out.append((after.at, 1000.0 * (after.seconds - before.seconds) / n))
    return out
