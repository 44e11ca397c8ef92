"""A service's replica offerings from the catalog: what `serve plan` (ops/serve/plan.py) and the
controller's placer choose among, one per place, cheapest first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skyform.serve.plan import Offering
from skyform.spec.models import ResourceChoices, TaskSpec


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
