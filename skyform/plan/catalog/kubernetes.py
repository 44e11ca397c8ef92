"""Kubernetes offers: a pod of the requested size, in each context whose nodes can hold it.

Kubernetes has no instance catalog: an offer is synthesised per request and per context, from
the context's discovered nodes (k8s_capacity.py). `region` and `context` are the context's name,
`zone` None, on-demand only, `capacity` the number of such pods the fitting nodes hold (by
allocatable resources), `arch` theirs. The type name follows SkyPilot (`4CPU--16GB`,
`32CPU--128GB--8xA100`). Price = vCPUs × PricePerVCPU + GiB × PricePerMemoryGB + accelerators ×
PricePerAccelerator from the pricing table (SkyPilot's `pricing.csv` schema; the default single
wildcard row prices everything at 0). The one most specific matching row is used: an exact
accelerator match beats a wildcard, then region+zone > region > zone > wildcard.

Sizes when the request does not give them (as SkyPilot): 2 vCPUs and 1 GiB per vCPU without an
accelerator, 4 vCPUs per GPU and 4 GiB per vCPU with them; `cpus: 4+` asks for exactly 4 (a pod
gets what it requests). A request for "N accelerators of any type" cannot be synthesised (which
GPU would the pod ask for?), so it yields no Kubernetes offer; nor do TPUs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from skyform.plan.catalog.onprem import instance_name

if TYPE_CHECKING:
    from skyform.plan.catalog.k8s_nodes import Fit

PRICING_COLUMNS = (
    "Region",
    "Zone",
    "PricePerVCPU",
    "PricePerMemoryGB",
    "AcceleratorName",
    "PricePerAccelerator",
)


class PricingRow(NamedTuple):
    region: str  # "" = any
    zone: str  # "" = any
    per_vcpu: float
    per_memory_gib: float
    accelerator: str  # "" = any
    per_accelerator: float

    def specificity(self, accelerator: str | None) -> tuple[int, int] | None:
        """How well this row fits; None when it does not apply."""
        if self.accelerator and self.accelerator != accelerator:
            return None
        location = {(True, True): 3, (True, False): 2, (False, True): 1, (False, False): 0}
        return (1 if self.accelerator else 0, location[(bool(self.region), bool(self.zone))])


class GpuInfo(NamedTuple):
    name: str
    memory_gib: float | None
    gke_label: str
    product_label: str


class KubernetesPricing:
    def __init__(self, rows: list[PricingRow]) -> None:
        self.rows = rows

    def row_for(self, region: str, zone: str | None, accelerator: str | None) -> PricingRow | None:
        best, best_key = None, None
        for row in self.rows:
            if row.region and row.region != region:
                continue
            if row.zone and row.zone != zone:
                continue
            key = row.specificity(accelerator)
            if key is not None and (best_key is None or key > best_key):
                best, best_key = row, key
        return best

    def price(
        self,
        region: str,
        zone: str | None,
        cpus: float,
        memory: float,
        acc: str | None,
        count: float,
    ) -> float:
        row = self.row_for(region, zone, acc)
        if row is None:
            return 0.0
        total = cpus * row.per_vcpu + memory * row.per_memory_gib
        if acc:
            total += count * row.per_accelerator
        return round(total, 8)


def default_size(cpus: float | None, memory: float | None, gpus: float) -> tuple[float, float]:
    """SkyPilot's pod size for what the request leaves open: 2 vCPUs and 1 GiB per vCPU without
    GPUs; 4 vCPUs per GPU and 4 GiB per vCPU with them."""
    if cpus is None:
        cpus = 4.0 * gpus if gpus else 2.0
    if memory is None:
        memory = cpus * (4.0 if gpus else 1.0)
    return cpus, memory


class Pod(NamedTuple):
    """The pod a request asks for (SkyPilot's virtual instance type, e.g. `4CPU--16GB--1xT4`)."""

    cpus: float
    memory: float
    accelerator: str | None
    accelerator_count: float

    @property
    def name(self) -> str:
        return instance_name(self.cpus, self.memory, self.accelerator, self.accelerator_count)


def pod_for(
    canonical: Callable[[str], str | None],
    *,
    cpus: float | None,
    memory: float | None,
    accelerator: str | None,
    count: float,
) -> Pod | None:
    """The pod for a request; None when it asks for an accelerator no node could carry."""
    if accelerator:
        if count <= 0 or accelerator.startswith("tpu-"):
            return None
        accelerator = canonical(accelerator) or accelerator
    else:
        count = 0.0
    cpus, memory = default_size(cpus, memory, count)
    return Pod(cpus, memory, accelerator, count)


def kubernetes_offer_row(pricing: KubernetesPricing, context: str, pod: Pod, placed: Fit) -> tuple:
    """One offer row: `pod` in `context` (region = context name; zone None; on-demand)."""
    price = pricing.price(
        context, None, pod.cpus, pod.memory, pod.accelerator, pod.accelerator_count
    )
    specs = (
        pod.accelerator,
        pod.accelerator_count,
        pod.cpus,
        pod.memory,
        placed.arch,
        placed.gpu_memory_gib,
    )
    return ("kubernetes", context, None, pod.name, False, price, *specs, context, placed.pods)
