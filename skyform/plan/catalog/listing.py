"""What `skyform gpus` shows, as plain rows (rendering lives in cli/render/gpus.py).

Like SkyPilot's `show-gpus`: one row per (accelerator, count, cloud, instance type) at its
cheapest region (`all_regions`: one row per region), with that region's cheapest on-demand and
spot prices across its zones. GCP's N1-attachable GPUs (T4, V100, P100, P4) can ride on many N1
machines; as SkyPilot does, each is shown on the cheapest N1 host with a default size (vCPUs per
GPU count from `N1_DISPLAY_VCPUS`, 4 GiB per vCPU), and the row is marked `attachable` — a task
may pick any N1 host within GCP's caps.
"""

from __future__ import annotations

from dataclasses import dataclass

from skyform.plan.catalog.accelerators import N1_DISPLAY_MEMORY_PER_VCPU, N1_DISPLAY_VCPUS
from skyform.plan.catalog.catalog import Catalog
from skyform.plan.catalog.offer import Offer


@dataclass(frozen=True)
class GpuRow:
    accelerator: str
    count: float
    cloud: str
    instance_type: str
    device_memory_gib: float | None
    vcpus: float | None
    host_memory_gib: float | None
    hourly_price: float | None  # cheapest on-demand in `region`; None = no on-demand offer
    hourly_spot_price: float | None
    region: str
    attachable: bool = False  # GCP N1 host shown for an attachable GPU

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class GpuSummary:
    accelerator: str
    cloud: str
    counts: tuple[float, ...]

    def to_dict(self) -> dict:
        return {"accelerator": self.accelerator, "cloud": self.cloud, "counts": list(self.counts)}


def _is_display_host(offer: Offer) -> bool:
    if offer.cloud != "gcp" or not offer.instance_type.startswith("n1-"):
        return True
    minimum = N1_DISPLAY_VCPUS.get(offer.accelerator or "", {}).get(offer.accelerator_count)
    if minimum is None or offer.vcpus is None or offer.memory_gib is None:
        return minimum is None
    return offer.vcpus >= minimum and offer.memory_gib >= minimum * N1_DISPLAY_MEMORY_PER_VCPU


def _n1_hosts_per_zone(offers: list[Offer]) -> set[tuple]:
    """(zone, accelerator, count, instance type) of the cheapest default-size N1 host."""
    best: dict[tuple, Offer] = {}
    for offer in offers:  # cheapest first, so the first on-demand per key wins
        if offer.spot or not offer.instance_type.startswith("n1-"):
            continue
        best.setdefault((offer.zone, offer.accelerator, offer.accelerator_count), offer)
    return {(*key, offer.instance_type) for key, offer in best.items()}


def gpu_rows(
    catalog: Catalog,
    accelerator: str,
    *,
    count: float | None = None,
    clouds: list[str] | None = None,
    region: str | None = None,
    all_regions: bool = False,
) -> list[GpuRow]:
    offers = catalog.query(
        clouds=clouds, accelerator=accelerator, accelerator_count=count, region=region
    )
    candidates = [o for o in offers if _is_display_host(o)]
    chosen = _n1_hosts_per_zone(candidates)
    groups: dict[tuple, dict[str, list[Offer]]] = {}
    for offer in candidates:
        attachable = offer.cloud == "gcp" and offer.instance_type.startswith("n1-")
        key4 = (offer.zone, offer.accelerator, offer.accelerator_count, offer.instance_type)
        if attachable and key4 not in chosen:
            continue
        key = (offer.accelerator, offer.accelerator_count, offer.cloud, offer.instance_type)
        groups.setdefault(key, {}).setdefault(offer.region, []).append(offer)
    rows = []
    for (acc, qty, cloud, itype), by_region in groups.items():
        per_region = [_region_row(acc, qty, cloud, itype, r, o) for r, o in by_region.items()]
        per_region.sort(key=_price_key)
        rows.extend(per_region if all_regions else per_region[:1])
    rows.sort(key=lambda r: (r.accelerator, r.count, *_price_key(r), r.cloud, r.instance_type))
    return rows


def _region_row(acc, qty, cloud, itype, region, offers: list[Offer]) -> GpuRow:
    on_demand = [o.hourly_price for o in offers if not o.spot]
    spot = [o.hourly_price for o in offers if o.spot]
    first = offers[0]
    return GpuRow(
        accelerator=acc,
        count=qty,
        cloud=cloud,
        instance_type=itype,
        device_memory_gib=first.gpu_memory_gib,
        vcpus=first.vcpus,
        host_memory_gib=first.memory_gib,
        hourly_price=min(on_demand) if on_demand else None,
        hourly_spot_price=min(spot) if spot else None,
        region=region,
        attachable=cloud == "gcp" and itype.startswith("n1-"),
    )


def _price_key(row: GpuRow) -> tuple:
    inf = float("inf")
    return (
        inf if row.hourly_price is None else row.hourly_price,
        inf if row.hourly_spot_price is None else row.hourly_spot_price,
        row.region,
    )


def gpu_summary(
    catalog: Catalog, *, clouds: list[str] | None = None, region: str | None = None
) -> list[GpuSummary]:
    """Each accelerator with the counts each cloud offers; TPU slices grouped by family
    (`tpu-v5p`, counts = slice sizes)."""
    found: dict[tuple[str, str], set[float]] = {}
    for (name, cloud), counts in catalog.accelerator_counts(clouds, region).items():
        for qty in counts:
            shown, shown_qty = name, qty
            if name.startswith("tpu-"):
                family, _, size = name.rpartition("-")
                shown, shown_qty = family, float(size) if size.isdigit() else qty
            found.setdefault((shown, cloud), set()).add(shown_qty)
    rows = [GpuSummary(n, c, tuple(sorted(q))) for (n, c), q in found.items()]
    rows.sort(key=lambda s: (s.accelerator.startswith("tpu-"), s.accelerator.lower(), s.cloud))
    return rows


def parse_gpu_filter(text: str) -> tuple[str, float | None]:
    """`A100:8` -> ("A100", 8.0); `A100` -> ("A100", None). Raises ValueError on a bad count."""
    name, sep, count = text.partition(":")
    if not sep:
        return name.strip(), None
    value = float(count)
    if not value > 0:
        raise ValueError(count)
    return name.strip(), value
