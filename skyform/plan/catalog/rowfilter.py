"""Offer rows filtered in memory (this machine, ssh pools, Kubernetes) the way the catalog
index filters its own rows in SQL (index.py's OfferFilter), and the cpus/memory bounds both
take."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from skyform.plan.catalog.index import OfferFilter
from skyform.plan.catalog.offer import (
    ACCEL,
    ACCEL_COUNT,
    ARCH,
    CONTEXT,
    INSTANCE_TYPE,
    MEMORY,
    PRICE,
    REGION,
    SPOT,
    VCPUS,
    ZONE,
)


def bound(spec: Any) -> tuple[float, bool] | None:
    """(value, at_least) from None, a number, or a Range-like object."""
    if spec is None:
        return None
    if isinstance(spec, (int, float)):
        return float(spec), True
    return float(spec.value), bool(spec.at_least)


def filter_rows(rows: Iterable[tuple], where: OfferFilter, *, ignore_place: bool = False) -> list:
    """In-memory rows (local, ssh, Kubernetes) passing `where`, as the index filters its own.
    Kubernetes rows were made for the request's context already (`ignore_place`)."""
    region = None if ignore_place else where.region
    context = None if ignore_place else where.context
    count, min_count, acc = where.count, where.min_count, where.accelerator
    wants_accelerator = (count or 0) > 0 or (min_count or 0) > 0
    out = []
    for row in rows:
        if acc is not None and row[ACCEL] != acc:
            continue
        if acc is None and wants_accelerator and not row[ACCEL]:
            continue
        if region is not None and row[REGION] != region:
            continue
        if where.zone is not None and row[ZONE] != where.zone:
            continue
        if context is not None and row[CONTEXT] != context:
            continue
        if count is not None and row[ACCEL_COUNT] != count:
            continue
        if min_count is not None and row[ACCEL_COUNT] < min_count:
            continue
        if where.spot is not None and row[SPOT] != where.spot:
            continue
        if where.max_price is not None and row[PRICE] > where.max_price:
            continue
        if where.instance_type is not None and row[INSTANCE_TYPE] != where.instance_type:
            continue
        if where.cpus is not None and not fits(row[VCPUS], where.cpus):
            continue
        if where.memory is not None and not fits(row[MEMORY], where.memory):
            continue
        ratio = where.memory_per_vcpu
        if ratio is not None and (row[MEMORY] or 0.0) < ratio * (row[VCPUS] or 0):
            continue
        if where.arch is not None and row[ARCH] != where.arch:
            continue
        out.append(row)
    return out


def fits(have: float | None, bound: tuple[float, bool]) -> bool:
    if have is None:
        return False
    value, at_least = bound
    return have >= value if at_least else have == value
