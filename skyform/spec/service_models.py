"""The normalized `service:` section (SkyServe): what the serve planner and controller read.

Defaults are SkyPilot's (sky/serve/constants.py, service_spec.py): probe path `/`, initial
delay 1200 s, probe timeout 15 s, 1 replica, upscale/downscale delays 300/1200 s,
`least_load`. The normalized form always has a probe mapping and a replica policy, as
SkyPilot's round-trip form does, so two spellings of one service digest the same.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from skyform.frozen import Frozen as _Frozen

DEFAULT_PROBE_PATH = "/"
DEFAULT_INITIAL_DELAY_SECONDS = 1200.0
DEFAULT_PROBE_TIMEOUT_SECONDS = 15.0
DEFAULT_MIN_REPLICAS = 1
DEFAULT_UPSCALE_DELAY_SECONDS = 300.0
DEFAULT_DOWNSCALE_DELAY_SECONDS = 1200.0
LB_POLICIES = ("round_robin", "least_load", "instance_aware_least_load")
DEFAULT_LB_POLICY = "least_load"
SPOT_PLACERS = ("dynamic_fallback",)
UPDATE_MODES = ("rolling", "blue_green")

LbPolicy = Literal["round_robin", "least_load", "instance_aware_least_load"]


class ReadinessProbe(_Frozen):
    """GET `path` (POST with a JSON body when `post_data` is set); only HTTP 200 passes."""

    path: str = DEFAULT_PROBE_PATH
    initial_delay_seconds: float = DEFAULT_INITIAL_DELAY_SECONDS
    timeout_seconds: float = DEFAULT_PROBE_TIMEOUT_SECONDS
    post_data: Any = None
    headers: dict[str, str] = {}

    @property
    def method(self) -> str:
        return "GET" if self.post_data is None else "POST"


class ReplicaPolicy(_Frozen):
    """`target_qps_per_replica` is one number, or {accelerator[:N]: qps} for
    instance_aware_least_load. `max_replicas` None means equal to `min_replicas`."""

    min_replicas: int = DEFAULT_MIN_REPLICAS
    max_replicas: int | None = None
    target_qps_per_replica: float | dict[str, float] | None = None
    upscale_delay_seconds: float = DEFAULT_UPSCALE_DELAY_SECONDS
    downscale_delay_seconds: float = DEFAULT_DOWNSCALE_DELAY_SECONDS
    num_overprovision: int = 0
    base_ondemand_fallback_replicas: int = 0
    dynamic_ondemand_fallback: bool = False
    spot_placer: str | None = None

    @property
    def upper(self) -> int:
        return self.min_replicas if self.max_replicas is None else self.max_replicas

    @property
    def autoscales(self) -> bool:
        return self.target_qps_per_replica is not None and self.upper != self.min_replicas

    @property
    def uses_ondemand_fallback(self) -> bool:
        return self.dynamic_ondemand_fallback or self.base_ondemand_fallback_replicas > 0

    def describe(self) -> str:
        """SkyPilot's wording (service_spec.py:485-511), e.g. `Fixed 2 replicas`."""
        extra = f" with {self.num_overprovision} overprovisioned" if self.num_overprovision else ""
        if not self.autoscales:
            plural = "" if self.min_replicas == 1 else "s"
            return f"Fixed {self.min_replicas} replica{plural}{extra}"
        qps = self.target_qps_per_replica
        shown = (
            ", ".join(f"{k}: {v:g}" for k, v in sorted(qps.items()))
            if isinstance(qps, dict)
            else f"{qps:g}"
        )
        return (
            f"Autoscaling from {self.min_replicas} to {self.upper} replicas"
            f"{extra} (target QPS per replica: {shown})"
        )

    def spot_policy(self) -> str:
        """SkyPilot's spot policy line (service_spec.py:458-483)."""
        if self.spot_placer is not None:
            policy = "SpotHedge"
            if self.dynamic_ondemand_fallback:
                return f"{policy} with dynamic on-demand fallback"
            return policy
        if self.dynamic_ondemand_fallback:
            return "Dynamic on-demand fallback"
        if self.base_ondemand_fallback_replicas:
            return (
                "Static spot mixture with "
                f"{self.base_ondemand_fallback_replicas} base on-demand replicas"
            )
        return "No spot policy"


class TlsFiles(_Frozen):
    keyfile: str
    certfile: str


class ServiceSpec(_Frozen):
    readiness_probe: ReadinessProbe = ReadinessProbe()
    replica_policy: ReplicaPolicy = ReplicaPolicy()
    ports: int
    load_balancing_policy: LbPolicy = "least_load"
    tls: TlsFiles | None = None

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"


def capacity_for(target: float | dict[str, float], accelerator: str | None) -> float:
    """A replica's QPS capacity under a per-accelerator target (SkyPilot's matching: exact
    `A100:1`, then base name `A100`, else the smallest value)."""
    if not isinstance(target, dict):
        return float(target)
    if accelerator is not None:
        if accelerator in target:
            return target[accelerator]
        base = accelerator.split(":")[0]
        for key, value in target.items():
            if key.split(":")[0] == base:
                return value
    return min(target.values())


def is_finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
