"""`service:` (SkyServe) -> ServiceSpec, with SkyPilot's schema and validation rules.

Sources: sky/utils/schemas.py get_service_schema, sky/serve/service_spec.py and
serve_utils.validate_service_task (see ../shared/notes/skypilot-subsystems.md §1.1). Where
SkyPilot's code and docs disagree we follow the notes: the probe defaults to `/`, and
`load_balancing_policy` is lower case only. Beyond SkyPilot, delays and probe times must be
non-negative numbers (SkyPilot's schema sets no minimum for them).
Every error names the file, line, column and field.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import Field

from skyform.spec.errors import Where, describe, did_you_mean
from skyform.spec.localpaths import check_local_file
from skyform.spec.models import ResourceChoices, ResourceRequest
from skyform.spec.raw import _Raw
from skyform.spec.service_models import (
    LB_POLICIES,
    SPOT_PLACERS,
    ReadinessProbe,
    ReplicaPolicy,
    ServiceSpec,
    TlsFiles,
    is_finite_number,
)
from skyform.spec.yamlpos import Path

ROOT: Path = ("service",)
ACCEL_KEY = re.compile(r"^[A-Z0-9]+(?::[0-9]+)?$")
NonNegative = Field(default=None, ge=0)


class RawProbe(_Raw):
    path: str
    initial_delay_seconds: float | None = NonNegative
    timeout_seconds: float | None = Field(default=None, gt=0)
    post_data: Any = None  # a JSON string or a mapping; checked in _probe
    headers: dict[str, str] | None = None


class RawReplicaPolicy(_Raw):
    min_replicas: int = Field(ge=0)
    max_replicas: int | None = NonNegative
    target_qps_per_replica: Any = None  # a number or {ACCEL[:N]: number}; checked below
    upscale_delay_seconds: float | None = NonNegative
    downscale_delay_seconds: float | None = NonNegative
    num_overprovision: int | None = NonNegative
    base_ondemand_fallback_replicas: int | None = NonNegative
    dynamic_ondemand_fallback: bool | None = None
    spot_placer: str | None = None


class RawTls(_Raw):
    keyfile: str
    certfile: str


class RawService(_Raw):
    readiness_probe: Any = None  # a path, or a mapping; checked in _probe
    replicas: int | None = NonNegative
    workers: int | None = NonNegative
    replica_policy: dict[str, Any] | None = None
    ports: int | None = Field(default=None, ge=1, le=65535)
    load_balancing_policy: str | None = None
    tls: dict[str, Any] | None = None
    pool: dict[str, Any] | None = None


def parse_service(raw: Any, where: Where, resources: ResourceChoices) -> ServiceSpec | None:
    if raw is None:
        return None
    spec = where.validate(RawService, raw, ROOT)
    if spec.pool is not None:
        where.fail(
            (*ROOT, "pool"),
            "'pool' inside service: is for job pools",
            "Write a top-level 'pool:' section for a job pool, or remove it here.",
            at_key=True,
        )
    probe = _probe(spec.readiness_probe, where)
    policy = _replica_policy(spec, where)
    lb_policy = _lb_policy(spec.load_balancing_policy, where)
    qps = policy.target_qps_per_replica
    if isinstance(qps, dict) and lb_policy != "instance_aware_least_load":
        where.fail(
            (*ROOT, "replica_policy", "target_qps_per_replica"),
            "a per-accelerator target_qps_per_replica needs "
            "load_balancing_policy: instance_aware_least_load",
            "Add 'load_balancing_policy: instance_aware_least_load' to service:, or give one "
            "number.",
        )
    if lb_policy == "instance_aware_least_load" and not isinstance(qps, dict):
        where.fail(
            (*ROOT, "load_balancing_policy"),
            "instance_aware_least_load needs target_qps_per_replica per accelerator",
            "Write e.g. 'target_qps_per_replica: {A100: 10, L4: 2}' in replica_policy.",
        )
    tls = None
    if spec.tls is not None:
        files = where.validate(RawTls, spec.tls, (*ROOT, "tls"))
        check_local_file(files.keyfile, "TLS keyfile", (*ROOT, "tls", "keyfile"), where)
        check_local_file(files.certfile, "TLS certfile", (*ROOT, "tls", "certfile"), where)
        tls = TlsFiles(keyfile=files.keyfile, certfile=files.certfile)
    _check_task(policy, resources, where)
    return ServiceSpec(
        readiness_probe=probe,
        replica_policy=policy,
        ports=_port(spec.ports, resources, where),
        load_balancing_policy=lb_policy,  # type: ignore[arg-type]
        tls=tls,
    )


def _probe(value: Any, where: Where) -> ReadinessProbe:
    at = (*ROOT, "readiness_probe")
    if value is None:
        return ReadinessProbe()
    if isinstance(value, str):
        _check_path(value, at, where)
        return ReadinessProbe(path=value)
    if not isinstance(value, dict):
        where.fail(
            at,
            f"readiness_probe must be a path or a mapping, got {describe(value)}",
            "Write e.g. 'readiness_probe: /health' or 'readiness_probe: {path: /health, "
            "initial_delay_seconds: 60}'.",
        )
    raw = where.validate(RawProbe, value, at)
    _check_path(raw.path, (*at, "path"), where)
    post_data = raw.post_data
    if post_data is not None and not isinstance(post_data, str | dict):
        where.fail(
            (*at, "post_data"),
            f"post_data must be a mapping or a JSON string, got {describe(post_data)}",
            "Write e.g. 'post_data: {model: my-model}'.",
        )
    if isinstance(post_data, str):
        try:
            post_data = json.loads(post_data)
        except json.JSONDecodeError as exc:
            where.fail(
                (*at, "post_data"),
                f"post_data is not valid JSON: {exc.msg}",
                "Write the body as a mapping (post_data: {model: x}) or as a JSON string.",
            )
    fields: dict[str, Any] = {"path": raw.path, "post_data": post_data}
    if raw.initial_delay_seconds is not None:
        fields["initial_delay_seconds"] = float(raw.initial_delay_seconds)
    if raw.timeout_seconds is not None:
        fields["timeout_seconds"] = float(raw.timeout_seconds)
    if raw.headers:
        fields["headers"] = dict(raw.headers)
    return ReadinessProbe(**fields)


def _check_path(path: str, at: Path, where: Where) -> None:
    if not path.startswith("/"):
        where.fail(
            at,
            f"readiness probe path must start with '/', got {path!r}",
            f"Write '/{path}'.",
        )


def _replica_policy(spec: RawService, where: Where) -> ReplicaPolicy:
    if spec.replicas is not None and spec.replica_policy is not None:
        where.fail(
            (*ROOT, "replicas"),
            "give either 'replicas' or 'replica_policy', not both",
            "Use 'replicas: N' for a fixed count, or replica_policy's min_replicas/max_replicas "
            "to autoscale.",
            at_key=True,
        )
    if spec.workers is not None and spec.replicas is not None:
        where.fail(
            (*ROOT, "workers"),
            "give either 'replicas' or 'workers', not both",
            "'workers' is the job-pool name of 'replicas'; a service uses 'replicas'.",
            at_key=True,
        )
    if spec.workers is not None and spec.replica_policy is not None:
        where.fail(
            (*ROOT, "workers"), "give either 'workers' or 'replica_policy', not both", at_key=True
        )
    if spec.replica_policy is None:
        fixed = spec.replicas if spec.replicas is not None else spec.workers
        return ReplicaPolicy() if fixed is None else ReplicaPolicy(min_replicas=fixed)
    at = (*ROOT, "replica_policy")
    rp = where.validate(RawReplicaPolicy, spec.replica_policy, at)
    qps = rp.target_qps_per_replica
    qps_at = (*at, "target_qps_per_replica")
    if qps is not None and not isinstance(qps, dict) and not is_finite_number(qps):
        where.fail(
            qps_at,
            f"target_qps_per_replica must be a number or a mapping accelerator -> number, "
            f"got {describe(qps)}",
            "Write e.g. 'target_qps_per_replica: 2.5' or '{A100: 10, L4: 2}'.",
        )
    if isinstance(qps, dict):
        if not qps:
            where.fail(qps_at, "target_qps_per_replica is an empty mapping")
        for key, value in qps.items():
            if not ACCEL_KEY.match(key):
                where.fail(
                    (*qps_at, key),
                    f"invalid accelerator key {key!r} in target_qps_per_replica",
                    "Keys are accelerator names in capitals, optionally with a count: "
                    "'A100', 'L4:2'.",
                    at_key=True,
                )
            _check_qps(value, (*qps_at, key), where)
    elif qps is not None:
        _check_qps(qps, qps_at, where)
    if rp.max_replicas is not None and rp.max_replicas < rp.min_replicas:
        where.fail(
            (*at, "max_replicas"),
            f"max_replicas ({rp.max_replicas}) is less than min_replicas ({rp.min_replicas})",
        )
    if qps is not None and rp.max_replicas is None:
        where.fail(
            qps_at,
            "target_qps_per_replica autoscales, so max_replicas must be set",
            "Add 'max_replicas: N' to replica_policy.",
        )
    if qps is None and rp.max_replicas is not None and rp.max_replicas != rp.min_replicas:
        where.fail(
            (*at, "max_replicas"),
            "autoscaling between min_replicas and max_replicas needs target_qps_per_replica",
            "Add 'target_qps_per_replica: N', or set max_replicas equal to min_replicas.",
        )
    placer = rp.spot_placer
    if placer is not None and placer not in SPOT_PLACERS:
        guess = did_you_mean(placer, SPOT_PLACERS)
        where.fail(
            (*at, "spot_placer"),
            f"unknown spot_placer {placer!r}",
            f"{'Did you mean ' + repr(guess) + '? ' if guess else ''}"
            f"Choose one of: {', '.join(SPOT_PLACERS)}.",
        )
    fields: dict[str, Any] = {
        "min_replicas": rp.min_replicas,
        "max_replicas": rp.max_replicas,
        "target_qps_per_replica": _numbers(qps),
        "num_overprovision": rp.num_overprovision or 0,
        "base_ondemand_fallback_replicas": rp.base_ondemand_fallback_replicas or 0,
        "dynamic_ondemand_fallback": bool(rp.dynamic_ondemand_fallback),
        "spot_placer": placer,
    }
    for key in ("upscale_delay_seconds", "downscale_delay_seconds"):
        if (value := getattr(rp, key)) is not None:
            fields[key] = float(value)
    return ReplicaPolicy(**fields)


def _check_qps(value: Any, at: Path, where: Where) -> None:
    if not is_finite_number(value):
        where.fail(at, f"target_qps_per_replica must be a number, got {describe(value)}")
    if not value > 0:
        where.fail(at, f"target_qps_per_replica must be greater than 0, got {value:g}")


def _numbers(qps: float | dict[str, float] | None) -> float | dict[str, float] | None:
    if isinstance(qps, dict):
        return {k: float(v) for k, v in qps.items()}
    return None if qps is None else float(qps)


def _lb_policy(value: str | None, where: Where) -> str:
    if value is None:
        return "least_load"
    if value not in LB_POLICIES:
        at = (*ROOT, "load_balancing_policy")
        if value.lower() in LB_POLICIES:
            where.fail(
                at,
                f"load_balancing_policy is lower case, got {value!r}",
                f"Write '{value.lower()}'.",
            )
        guess = did_you_mean(value, LB_POLICIES)
        where.fail(
            at,
            f"unknown load_balancing_policy {value!r}",
            f"{'Did you mean ' + repr(guess) + '? ' if guess else ''}"
            f"Choose one of: {', '.join(LB_POLICIES)}.",
        )
    return value


def _check_task(policy: ReplicaPolicy, resources: ResourceChoices, where: Where) -> None:
    alternatives = resources.alternatives()
    spot = {r.use_spot for r in alternatives}
    if len(spot) > 1:
        where.fail(
            ("resources",),
            "a service's resources must be all spot or all on-demand",
            "Set use_spot the same in every any_of/ordered entry; on-demand fallback for spot "
            "replicas is replica_policy.base_ondemand_fallback_replicas or "
            "dynamic_ondemand_fallback.",
            at_key=True,
        )
    if any(r.job_recovery is not None for r in alternatives):
        where.fail(
            ("resources", "job_recovery"),
            "job_recovery does not apply to a service",
            "Remove it: the service controller replaces failed and preempted replicas itself.",
            at_key=True,
        )
    at = (*ROOT, "replica_policy")
    needs_spot = (
        ("base_ondemand_fallback_replicas", policy.base_ondemand_fallback_replicas > 0),
        ("dynamic_ondemand_fallback", policy.dynamic_ondemand_fallback),
        ("spot_placer", policy.spot_placer is not None),
    )
    for key, used in needs_spot:
        if used and spot != {True}:
            where.fail(
                (*at, key),
                f"{key} needs spot replicas",
                "Add 'use_spot: true' to resources.",
                at_key=True,
            )
    if policy.spot_placer is not None and len(alternatives) > 1:
        location_free = {_without_location(r) for r in alternatives}
        if len(location_free) > 1:
            where.fail(
                (*at, "spot_placer"),
                "with a spot_placer, resource alternatives may differ only in infra "
                "(cloud, region, zone)",
                "Keep one machine shape and list the places it may run in any_of.",
                at_key=True,
            )


def _without_location(request: ResourceRequest) -> str:
    return request.model_copy(update={"cloud": None, "region": None, "zone": None}).canonical_json()


def _port(port: int | None, resources: ResourceChoices, where: Where) -> int:
    """SkyPilot's port resolution: service.ports, or the one port every resources entry opens."""
    opened = [_ranges(r) for r in resources.alternatives()]
    if port is not None:
        for ranges in opened:
            if ranges and not any(low <= port <= high for low, high in ranges):
                where.fail(
                    (*ROOT, "ports"),
                    f"service port {port} is not opened by resources.ports",
                    f"Add {port} to resources.ports (or remove resources.ports).",
                )
        return port
    if any(not ranges for ranges in opened):
        where.fail(
            ROOT,
            "the service has no port",
            "Set 'ports: 8080' under service: (or resources.ports: 8080) to the port the "
            "replica's server listens on.",
            at_key=True,
        )
    distinct = {ranges for ranges in opened}
    only = next(iter(distinct))
    if len(distinct) != 1 or len(only) != 1 or only[0][0] != only[0][1]:
        shown = "; ".join(sorted(", ".join(_show(r) for r in ranges) for ranges in distinct))
        where.fail(
            ("resources",),
            f"resources open more than one port ({shown}), so the service port is ambiguous",
            "Set 'ports: N' under service: to the port the replica's server listens on.",
            at_key=True,
        )
    return only[0][0]


def _ranges(request: ResourceRequest) -> tuple[tuple[int, int], ...]:
    out = []
    for item in request.ports:
        low, _, high = item.partition("-")
        out.append((int(low), int(high or low)))
    return tuple(out)


def _show(span: tuple[int, int]) -> str:
    return str(span[0]) if span[0] == span[1] else f"{span[0]}-{span[1]}"
