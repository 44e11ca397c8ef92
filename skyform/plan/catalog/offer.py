"""`Offer` — one concrete, priced thing the optimizer can choose — and `Location`.

Offers are frozen slotted dataclasses rather than pydantic models: the catalog holds tens of
thousands of them and materialises the ones a query returns, so construction must be cheap.
Internally the catalog keeps each offer as a plain tuple in `FIELDS` order (`Offer(*row)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Location:
    """Where data or a node lives; `zone`/`region` None means "not known more precisely"."""

    cloud: str
    region: str | None = None
    zone: str | None = None


@dataclass(frozen=True, slots=True)
class Offer:
    """One node of one instance type in one zone, on-demand or spot, with its hourly price.

    - `accelerator` is the canonical name (`A100`, `tpu-v5p-128`) or None; `accelerator_count`
      is a float because AWS sells fractions (g6f: 0.25 L4) and 0.0 when there is none.
    - `vcpus`/`memory_gib` are None when unknown (TPU VMs, ssh hosts that do not declare them);
      such offers only match queries that do not constrain them.
    - `gpu_memory_gib` is per accelerator; `capacity` is the number of hosts for ssh pools, the
      number of such pods the nodes hold on Kubernetes, and None (unbounded) everywhere else.
    - `context` is the ssh pool name or the Kubernetes context's name (also its `region`).
    """

    cloud: str
    region: str
    zone: str | None
    instance_type: str
    spot: bool
    hourly_price: float
    accelerator: str | None = None
    accelerator_count: float = 0.0
    vcpus: float | None = None
    memory_gib: float | None = None
    arch: str = "x86_64"
    gpu_memory_gib: float | None = None
    context: str | None = None
    capacity: int | None = None

    @property
    def sort_key(self) -> tuple:
        return sort_key(self)

    @property
    def id(self) -> str:
        """Stable identifier, e.g. `aws/us-east-1/use1-az4/p4d.24xlarge/spot`.

        GCP N1 hosts carry attachable GPUs, so their id names the GPU too
        (`gcp/us-central1/us-central1-a/n1-standard-8+V100x2/ondemand`); ssh ids start with the
        pool (`ssh/lab/west/west-a/4CPU--16GB/ondemand`).
        """
        return offer_id(self)

    @property
    def location(self) -> Location:
        return Location(self.cloud, self.region, self.zone)

    @property
    def accelerators(self) -> dict[str, float]:
        """`{name: count}` as task YAML writes it (empty for CPU-only offers)."""
        return {self.accelerator: self.accelerator_count} if self.accelerator else {}

    def __lt__(self, other: Offer) -> bool:
        return sort_key(self) < sort_key(other)

    def __le__(self, other: Offer) -> bool:
        return sort_key(self) <= sort_key(other)

    def __gt__(self, other: Offer) -> bool:
        return sort_key(self) > sort_key(other)

    def __ge__(self, other: Offer) -> bool:
        return sort_key(self) >= sort_key(other)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict with every field (plans store offers this way)."""
        return {name: getattr(self, name) for name in FIELDS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Offer:
        unknown = set(data) - set(FIELDS)
        if unknown:
            raise ValueError(f"unknown Offer field(s): {', '.join(sorted(unknown))}")
        values = dict(data)
        for name in ("hourly_price", "accelerator_count"):
            if name in values:
                values[name] = float(values[name])
        for name in ("vcpus", "memory_gib", "gpu_memory_gib"):
            if values.get(name) is not None:
                values[name] = float(values[name])
        return cls(**values)


FIELDS: tuple[str, ...] = tuple(Offer.__dataclass_fields__)

# Positions of each field in the internal row tuples (same order as FIELDS).
CLOUD, REGION, ZONE, INSTANCE_TYPE, SPOT, PRICE, ACCEL, ACCEL_COUNT = range(8)
VCPUS, MEMORY, ARCH, GPU_MEM, CONTEXT, CAPACITY = range(8, 14)


def row_sort_key(row: tuple) -> tuple:
    """Total order: price, cloud, region, zone, instance type, spot, then what tells apart the
    rest (accelerator, count, context), so sorting is deterministic whatever the input order."""
    return (
        row[PRICE],
        row[CLOUD],
        row[REGION],
        row[ZONE] or "",
        row[INSTANCE_TYPE],
        row[SPOT],
        row[ACCEL] or "",
        row[ACCEL_COUNT],
        row[CONTEXT] or "",
    )


def sort_key(offer: Offer) -> tuple:
    return (
        offer.hourly_price,
        offer.cloud,
        offer.region,
        offer.zone or "",
        offer.instance_type,
        offer.spot,
        offer.accelerator or "",
        offer.accelerator_count,
        offer.context or "",
    )


def needs_opt_in(offer: Offer) -> bool:
    """AWS Local Zones (`usw2-lax1-az1`, unlike `usw2-az1`) must be enabled per account and
    have no default subnet: the planner uses them only when a task names the zone."""
    return offer.cloud == "aws" and (offer.zone or "").count("-") >= 2


def format_count(count: float) -> str:
    """8.0 -> "8", 0.25 -> "0.25"."""
    return str(int(count)) if float(count).is_integer() else repr(float(count))


def offer_id(offer: Offer) -> str:
    kind = "spot" if offer.spot else "ondemand"
    machine = offer.instance_type
    if offer.cloud == "gcp" and offer.accelerator and machine.startswith("n1-"):
        machine = f"{machine}+{offer.accelerator}x{format_count(offer.accelerator_count)}"
    parts = [offer.cloud]
    if offer.cloud == "ssh":
        parts.append(offer.context or "")
    parts += [offer.region, offer.zone or "-", machine, kind]
    return "/".join(parts)
