"""Kubernetes offers, synthesised per request (Kubernetes has no instance catalog).

A pod of the requested size is offered in the named context (`region` = context name, or
`default` for the current context; `zone` None; on-demand only). Its type name follows SkyPilot
(`4CPU--16GB`, `4CPU--16GB--1xT4`). Price = vCPUs × PricePerVCPU + GiB × PricePerMemoryGB +
accelerators × PricePerAccelerator from the pricing table (SkyPilot's `pricing.csv` schema; the
default single wildcard row prices everything at 0). The one most specific matching row is used:
an exact accelerator match beats a wildcard, then region+zone > region > zone > wildcard.

Sizes when the request does not give them (as SkyPilot): 2 vCPUs and 1 GiB per vCPU without an
accelerator, 4 vCPUs and 4 GiB per vCPU with one. Only accelerators listed in
`k8s_gpu_labels.csv` can be offered, and a request for "N accelerators of any type" cannot be
synthesised (which GPU would the pod ask for?), so it yields no Kubernetes offer.
"""

from __future__ import annotations

from typing import NamedTuple

from skyform.plan.catalog.onprem import instance_name

DEFAULT_CONTEXT = "default"
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


def default_size(cpus: float | None, memory: float | None, has_gpu: bool) -> tuple[float, float]:
    if cpus is None:
        cpus = 4.0 if has_gpu else 2.0
    if memory is None:
        memory = cpus * (4.0 if has_gpu else 1.0)
    return cpus, memory


def kubernetes_offer_row(
    pricing: KubernetesPricing,
    gpus: dict[str, GpuInfo],
    *,
    context: str | None,
    cpus: float | None,
    memory: float | None,
    accelerator: str | None,
    count: float,
) -> tuple | None:
    """One synthesised offer row, or None when the accelerator is not a known GPU."""
    gpu = None
    if accelerator:
        gpu = gpus.get(accelerator)
        if gpu is None or count <= 0:
            return None
    cpus, memory = default_size(cpus, memory, gpu is not None)
    region = context or DEFAULT_CONTEXT
    acc = gpu.name if gpu else None
    count = count if gpu else 0.0
    price = pricing.price(region, None, cpus, memory, acc, count)
    name = instance_name(cpus, memory, acc, count)
    gpu_mem = gpu.memory_gib if gpu else None
    specs = (acc, count, cpus, memory, "x86_64", gpu_mem, context, None)
    return ("kubernetes", region, None, name, False, price, *specs)
