"""Prometheus-style metrics of the load balancer (text exposition format 0.0.4).

Requests by status code, a latency histogram (request start to the last byte relayed),
in-flight requests per replica, retries, and the number of routable replicas.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping
from typing import Any

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Metrics:
    def __init__(self) -> None:
        self.by_code: Counter[int] = Counter()
        self.by_replica: Counter[int] = Counter()
        self.bucket_counts = [0] * (len(BUCKETS) + 1)
        self.latency_sum = 0.0
        self.retries = 0

    def observe(self, code: int, seconds: float, replica_id: int | None) -> None:
        self.by_code[code] += 1
        if replica_id is not None:
            self.by_replica[replica_id] += 1
        self.bucket_counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.latency_sum += seconds

    def total(self) -> int:
        return sum(self.by_code.values())

    def snapshot(self) -> dict[str, Any]:
        """Everything counted, as JSON (a worker's report: serve/lb/workers.py)."""
        return {
            "codes": dict(self.by_code),
            "replicas": dict(self.by_replica),
            "buckets": self.bucket_counts,
            "sum": self.latency_sum,
            "retries": self.retries,
        }

    def merge(self, snapshot: Mapping[str, Any]) -> int:
        """Add another process's `snapshot`; returns the requests it counted."""
        codes = {int(k): int(v) for k, v in snapshot["codes"].items()}
        self.by_code.update(codes)
        self.by_replica.update({int(k): int(v) for k, v in snapshot["replicas"].items()})
        for i, n in enumerate(snapshot["buckets"][: len(self.bucket_counts)]):
            self.bucket_counts[i] += int(n)
        self.latency_sum += float(snapshot["sum"])
        self.retries += int(snapshot["retries"])
        return sum(codes.values())

    def render(
        self,
        service: str,
        inflight: Mapping[int, int],
        ready: int,
        draining: int,
        by_worker: Mapping[int, int] | None = None,
    ) -> str:
        svc = _label(service)
        lines = [
            "# HELP skyform_lb_requests_total Requests answered by the load balancer.",
            "# TYPE skyform_lb_requests_total counter",
        ]
        lines += [
            f'skyform_lb_requests_total{{service="{svc}",code="{code}"}} {n}'
            for code, n in sorted(self.by_code.items())
        ]
        lines += [
            "# HELP skyform_lb_replica_requests_total Requests routed to each replica.",
            "# TYPE skyform_lb_replica_requests_total counter",
        ]
        lines += [
            f'skyform_lb_replica_requests_total{{service="{svc}",replica="{rid}"}} {n}'
            for rid, n in sorted(self.by_replica.items())
        ]
        lines += [
            "# HELP skyform_lb_request_duration_seconds Time from request to last byte.",
            "# TYPE skyform_lb_request_duration_seconds histogram",
        ]
        total = 0
        for bound, count in zip((*BUCKETS, float("inf")), self.bucket_counts, strict=True):
            total += count
            le = "+Inf" if bound == float("inf") else f"{bound:g}"
            lines.append(
                f'skyform_lb_request_duration_seconds_bucket{{service="{svc}",le="{le}"}} {total}'
            )
        lines.append(
            f'skyform_lb_request_duration_seconds_sum{{service="{svc}"}} {self.latency_sum}'
        )
        lines.append(f'skyform_lb_request_duration_seconds_count{{service="{svc}"}} {total}')
        lines += _family(
            "skyform_lb_replica_inflight", "Requests in flight per replica.", "gauge",
            svc, "replica", inflight,
        )  # fmt: skip
        lines += [
            "# TYPE skyform_lb_retries_total counter",
            f'skyform_lb_retries_total{{service="{svc}"}} {self.retries}',
            "# TYPE skyform_lb_ready_replicas gauge",
            f'skyform_lb_ready_replicas{{service="{svc}"}} {ready}',
            "# TYPE skyform_lb_draining_replicas gauge",
            f'skyform_lb_draining_replicas{{service="{svc}"}} {draining}',
        ]
        if by_worker:
            lines += _family(
                "skyform_lb_worker_requests_total", "Requests answered by each worker process.",
                "counter", svc, "worker", by_worker,
            )  # fmt: skip
        return "\n".join(lines) + "\n"


def _family(
    name: str, about: str, kind: str, svc: str, label: str, values: Mapping[Any, int]
) -> list[str]:
    """One metric with a sample per `label` value (its HELP and TYPE lines first)."""
    return [f"# HELP {name} {about}", f"# TYPE {name} {kind}"] + [
        f'{name}{{service="{svc}",{label}="{key}"}} {n}' for key, n in sorted(values.items())
    ]


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
