"""`skyform serve plan`: the I/O around the pure service plan (task file, config, catalog)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skyform.serve.plan import Offering, ServicePlan, plan_service, service_name
from skyform.spec.models import ResourceChoices, TaskSpec


@dataclass(frozen=True)
class ServicePlanResult:
    plan: ServicePlan
    task: TaskSpec
    warnings: list[str] = field(default_factory=list)


def plan_service_file(
    task_file: Path, *, name: str | None = None, load_kwargs: dict[str, Any] | None = None
) -> ServicePlanResult:
    from skyform.config import load_config
    from skyform.errors import SpecError
    from skyform.plan.catalog import load_catalog
    from skyform.plan.optimizer import default_clouds
    from skyform.spec import load_task

    dag = load_task(task_file, **(load_kwargs or {}))
    if len(dag.tasks) != 1:
        raise SpecError(
            f"a service is one task; this file has {len(dag.tasks)}",
            "Put the service in a file of its own.",
            path=str(task_file),
        )
    task = dag.tasks[0]
    catalog = load_catalog(load_config())
    clouds = default_clouds(catalog, None)

    def offers_for(resources: ResourceChoices) -> Sequence[Offering]:
        from skyform.plan.optimizer import no_offers_error

        replica = replace_resources(task, resources)
        found = catalog_offerings(replica, catalog, clouds)
        if not found:
            raise no_offers_error(replica, 0, catalog, clouds, ())
        return found

    warnings = list(dag.warnings)
    if catalog.source.warning:
        warnings.append(catalog.source.warning)
    fallback = Path(task_file).stem
    plan = plan_service(task, service_name(name, task, fallback), os.fspath(task_file), offers_for)
    return ServicePlanResult(plan=plan, task=task, warnings=warnings)


def replace_resources(task: TaskSpec, resources: ResourceChoices) -> TaskSpec:
    return task.model_copy(update={"resources": resources})


def catalog_offerings(task: TaskSpec, catalog: Any, clouds: Sequence[str]) -> list[Offering]:
    from skyform.plan.optimizer import task_candidates

    out: dict[str, Offering] = {}
    for candidate in task_candidates(task, catalog, clouds):
        offer = candidate.offer
        infra = _infra(offer.cloud, offer.context or offer.region, offer.zone)
        if infra in out:
            continue
        out[infra] = Offering(
            infra=infra,
            instance_type=offer.instance_type,
            spot=offer.spot,
            num_nodes=candidate.num_nodes,
            hourly_cost=round(candidate.hourly_cost, 6),
            accelerator=(
                f"{offer.accelerator}:{offer.accelerator_count:g}" if offer.accelerator else None
            ),
        )
    return sorted(out.values(), key=lambda o: o.hourly_cost)


def _infra(*parts: str | None) -> str:
    """`gcp/us-central1/us-central1-a`, `ssh/lab/zone-a`, `local` (no part said twice)."""
    out: list[str] = []
    for part in parts:
        if part and part not in out:
            out.append(part)
    return "/".join(out)
