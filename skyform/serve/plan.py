"""A service's plan: where the load balancer runs, where each replica runs, what it costs.

Each replica slot is a placement from the same optimizer candidates `skyform plan` uses (the
cheapest offer per place). Spot replicas are spread as the spot placer would launch them
(cheapest unused location first) when `spot_placer` is set, else they all take the
cheapest place. On-demand replicas are SkyPilot's fallback: `base_ondemand_fallback_replicas`
always run; `dynamic_ondemand_fallback` replicas run only while spot replicas are not READY,
so they are listed and priced as the worst case, not in the min/max lines. Slots past the
min count run only when the autoscaler scales up. Pure: the catalog comes in as an argument.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

from skyform.errors import NoOffersError, SpecError
from skyform.frozen import Frozen as _Model
from skyform.serve.autoscaler import fallback_targets
from skyform.serve.placer import SpotLocation, SpotPlacer
from skyform.spec.models import ResourceChoices, TaskSpec
from skyform.spec.service_models import ServiceSpec

SERVICE_NAME = re.compile(r"[a-zA-Z]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?")
LB_PLACEMENT = "this machine (the local controller), next to the managed-job controllers"

Role = Literal["spot", "on-demand", "on-demand fallback"]


class ReplicaSlot(_Model):
    slot: int
    role: Role
    runs: Literal["at min", "when scaled up", "while spot is not READY"]
    infra: str
    instance_type: str
    spot: bool
    num_nodes: int
    hourly_cost: float
    accelerator: str | None = None


class ServicePlan(_Model):
    service: str
    task_path: str
    port: int
    scheme: str
    readiness_probe: str
    autoscaling: str
    spot_policy: str
    load_balancing_policy: str
    load_balancer: str
    min_replicas: int
    max_replicas: int
    replicas: list[ReplicaSlot]
    hourly_cost_at_min: float
    hourly_cost_at_max: float
    hourly_cost_worst_case: float | None = None  # with every dynamic fallback replica up


def service_name(name: str | None, task: TaskSpec, fallback: str) -> str:
    chosen = name or task.name or fallback
    if not SERVICE_NAME.fullmatch(chosen):
        raise SpecError(
            f"invalid service name {chosen!r}",
            "Start with a letter; then letters, digits, '-', '_' or '.'; end with a letter or "
            "digit. Pick one with -n NAME.",
        )
    return chosen


def plan_service(
    task: TaskSpec,
    name: str,
    task_path: str,
    offers_for: OffersFor,
) -> ServicePlan:
    spec = task.service
    if spec is None:
        raise SpecError(
            "the task has no service: section",
            "Add one (at least 'service: {readiness_probe: /, replicas: 1}') or run it with "
            "`skyform launch`.",
            path=task.source.path,
        )
    policy = spec.replica_policy
    spot = all(r.use_spot for r in task.resources.alternatives())
    declared = offers_for(task.resources)
    if not declared:
        raise NoOffersError(f"no offer fits the replicas of service {name!r}")
    ondemand_offers: Sequence[Offering] = ()
    if spot and policy.uses_ondemand_fallback:
        ondemand_offers = offers_for(_on_demand(task.resources))
        if not ondemand_offers:
            raise NoOffersError(f"no on-demand offer fits the fallback replicas of {name!r}")

    def final(target: int) -> int:
        return target + policy.num_overprovision if target > 0 else 0

    low, high = final(policy.min_replicas), final(policy.upper)
    if spot and policy.uses_ondemand_fallback:
        spot_low, od_low = fallback_targets(policy, low, policy.min_replicas, low)
        spot_high, od_high = fallback_targets(policy, high, policy.upper, high)
        dynamic = spot_high if policy.dynamic_ondemand_fallback else 0
    else:
        spot_low, od_low, spot_high, od_high, dynamic = low, 0, high, 0, 0
    main_role: Role = "spot" if spot else "on-demand"
    slots: list[ReplicaSlot] = []
    for i in range(od_high):
        slots.append(_slot(len(slots) + 1, "on-demand", i < od_low, ondemand_offers[0]))
    for i, offering in enumerate(_spread(declared, spot_high, spec, spot)):
        slots.append(_slot(len(slots) + 1, main_role, i < spot_low, offering))
    for _ in range(dynamic):
        slots.append(_slot(len(slots) + 1, "on-demand fallback", False, ondemand_offers[0]))
    at_min = sum(s.hourly_cost for s in slots if s.runs == "at min")
    at_max = sum(s.hourly_cost for s in slots if s.role != "on-demand fallback")
    worst = None
    if dynamic:
        worst = sum(s.hourly_cost for s in slots if s.role != "spot")
    probe = spec.readiness_probe
    return ServicePlan(
        service=name,
        task_path=task_path,
        port=spec.ports,
        scheme=spec.scheme,
        readiness_probe=(
            f"{probe.method} {probe.path} (initial delay {probe.initial_delay_seconds:g} s, "
            f"timeout {probe.timeout_seconds:g} s)"
        ),
        autoscaling=policy.describe(),
        spot_policy=policy.spot_policy(),
        load_balancing_policy=spec.load_balancing_policy,
        load_balancer=LB_PLACEMENT,
        min_replicas=low,
        max_replicas=high,
        replicas=slots,
        hourly_cost_at_min=round(at_min, 6),
        hourly_cost_at_max=round(at_max, 6),
        hourly_cost_worst_case=None if worst is None else round(worst, 6),
    )


class Offering(_Model):
    """One candidate place for a replica (the cheapest offer there)."""

    infra: str
    instance_type: str
    spot: bool
    num_nodes: int
    hourly_cost: float
    accelerator: str | None = None


# the cheapest offer per place for these resources, cheapest first
OffersFor = Callable[[ResourceChoices], Sequence[Offering]]


def _spread(
    offers: Sequence[Offering], count: int, spec: ServiceSpec, spot: bool
) -> list[Offering]:
    if not (spot and spec.replica_policy.spot_placer):
        return [offers[0]] * count
    by_infra = {o.infra: o for o in offers}
    placer = SpotPlacer([SpotLocation(o.infra, o.hourly_cost) for o in offers])
    return [by_infra[loc.infra] for loc in placer.spread(count)]


def _slot(number: int, role: Role, at_min: bool, offering: Offering) -> ReplicaSlot:
    runs: Literal["at min", "when scaled up", "while spot is not READY"]
    if role == "on-demand fallback":
        runs = "while spot is not READY"
    else:
        runs = "at min" if at_min else "when scaled up"
    return ReplicaSlot(slot=number, role=role, runs=runs, **offering.model_dump())


def _on_demand(resources: ResourceChoices) -> ResourceChoices:
    return ResourceChoices(
        groups=tuple(
            tuple(r.model_copy(update={"use_spot": False}) for r in group)
            for group in resources.groups
        )
    )
