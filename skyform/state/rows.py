"""What `status` shows of a cluster, read from its stored record without pydantic or the
models (~0.1 s of a `status` process): `cluster_row` takes the few fields the table prints
and checks each one's type as the model would have; a record with autostop (status must
converge it, with the models) or any field not as this version writes it gives None, and
the caller reads every record through the models instead, exactly as before — including the
error that names a damaged record. Fields the table does not print are not checked here.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

from skyform.infra import infra_path


class ClusterStatus(str, Enum):
    INIT = "INIT"  # an apply started and has not finished (Terraform would say tainted)
    UP = "UP"
    STOPPED = "STOPPED"
    LOST = "LOST"  # nodes were preempted or died: the next apply rebuilds it


_STATUSES = {s.value: s for s in ClusterStatus}


@dataclass(frozen=True, slots=True)
class OfferRow:
    """The fields of a PlacedOffer the status table prints."""

    cloud: str
    region: str
    zone: str | None
    context: str | None
    instance_type: str
    spot: bool
    accelerator: str | None
    accelerator_count: float
    vcpus: float | None
    memory_gib: float | None

    @property
    def infra(self) -> str:
        return infra_path(self.cloud, self.region, self.zone, self.context)


@dataclass(frozen=True, slots=True)
class ClusterRow:
    """One line of `status`: a ClusterRecord's name, status, offer, size, launch and price."""

    name: str  # as shown: typed with -c (`my_cluster`), else the cluster's own
    status: ClusterStatus
    offer: OfferRow
    num_nodes: int
    launched_at: float | None
    hourly_price: float  # per node


class _Unfit(Exception):
    """The record needs the models (autostop, or a field not as this version writes it)."""


def cluster_row(text: str) -> ClusterRow | None:
    """The row of one stored ClusterRecord (None: read it through the models)."""
    try:
        record = json.loads(text)
        return _row(record)
    except (_Unfit, ValueError, TypeError, KeyError, AttributeError):
        return None


def _row(record: dict[str, Any]) -> ClusterRow:
    spec, offer = record["spec"], record["spec"]["offer"]
    if spec.get("autostop") is not None:
        raise _Unfit("autostop")
    _text(spec, "name")  # required by the models, though not printed
    shown = _text(spec, "shown_as", optional=True, default=True)
    _number(offer, "hourly_price")
    nodes = spec["num_nodes"]
    if type(nodes) is not int or nodes < 1:
        raise _Unfit("num_nodes")
    status = _STATUSES[record["status"]]
    return ClusterRow(
        name=shown or _text(record, "name"),
        status=status,
        offer=OfferRow(
            cloud=_text(offer, "cloud"),
            region=_text(offer, "region"),
            zone=_text(offer, "zone", optional=True),
            context=_text(offer, "context", optional=True, default=True),
            instance_type=_text(offer, "instance_type"),
            spot=_flag(offer, "spot"),
            accelerator=_text(offer, "accelerator", optional=True, default=True),
            accelerator_count=_number(offer, "accelerator_count", default=0.0),
            vcpus=_number(offer, "vcpus", optional=True),
            memory_gib=_number(offer, "memory_gib", optional=True),
        ),
        num_nodes=nodes,
        launched_at=_number(record, "launched_at", optional=True),
        hourly_price=_number(record, "hourly_price"),
    )


def _text(data: dict, key: str, *, optional: bool = False, default: bool = False) -> Any:
    value = data.get(key) if default else data[key]
    if type(value) is str or (optional and value is None):
        return value
    raise _Unfit(key)


def _flag(data: dict, key: str) -> bool:
    value = data[key]
    if type(value) is bool:
        return value
    raise _Unfit(key)


def _number(data: dict, key: str, *, optional: bool = False, default: float | None = None) -> Any:
    """A float field: a JSON number (an int becomes a float, as pydantic makes it)."""
    if default is not None or optional:
        value = data.get(key, default)
    else:
        value = data[key]
    if optional and value is None:
        return None
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        return float(value)
    raise _Unfit(key)
