"""The use cases behind `catalog show`, `catalog refresh` and `gpus`: the price catalog in use,
fetching a newer one, and which accelerators it offers where."""

from __future__ import annotations

from skyform.config import load_config
from skyform.errors import CatalogError, NoOffersError
from skyform.infra import ON_PREM
from skyform.plan.catalog import Catalog, load_catalog
from skyform.plan.catalog.listing import GpuRow, GpuSummary, gpu_rows, gpu_summary, parse_gpu_filter
from skyform.plan.catalog.refresh import (
    DEFAULT_BASE_URL,
    RefreshResult,
    catalog_status,
    refresh_catalog,
)


def refresh(url: str | None) -> RefreshResult:
    """SkyPilot's public catalog (or the one at `url`) into SKYFORM_HOME/catalog, all or none."""
    return refresh_catalog(url or DEFAULT_BASE_URL)


def status() -> dict:
    """Which catalog is in use (bundled or refreshed), where, its digest, size and age."""
    return catalog_status(load_catalog(load_config()))


def accelerators(clouds: list[str] | None, region: str | None) -> list[GpuSummary]:
    """Each accelerator with the counts each cloud offers (`gpus` with no name)."""
    catalog = load_catalog(load_config())
    return gpu_summary(catalog, clouds=clouds or _default_clouds(catalog), region=region)


def accelerator_offers(
    name: str, clouds: list[str] | None, region: str | None, *, all_regions: bool
) -> list[GpuRow]:
    """NAME[:COUNT]'s instance types and prices (`gpus NAME`), cheapest region or every one."""
    catalog = load_catalog(load_config())
    chosen = clouds or _default_clouds(catalog)
    try:
        wanted, count = parse_gpu_filter(name)
    except ValueError:
        raise CatalogError(
            f"Bad accelerator filter {name!r}: the count after ':' must be a positive number.",
            hint="Write NAME or NAME:COUNT, e.g. `skyform gpus A100:8`.",
        ) from None
    canonical = catalog.canonical_accelerator(wanted)
    if canonical is None:
        close = catalog.suggest_accelerators(wanted)
        hint = f"Did you mean: {', '.join(close)}? " if close else ""
        raise CatalogError(
            f"Unknown accelerator {wanted!r}.", hint=hint + "Run `skyform gpus` to list them all."
        )
    rows = gpu_rows(
        catalog, canonical, count=count, clouds=chosen, region=region, all_regions=all_regions
    )
    if not rows:
        raise NoOffersError(_nothing_found(catalog, canonical, count, chosen, region))
    return rows


def _default_clouds(catalog: Catalog) -> list[str]:
    """The price-catalog clouds, plus ssh pools and this machine when they have accelerators."""
    clouds = list(catalog.default_clouds)
    onprem = catalog.query(clouds=list(ON_PREM), min_accelerator_count=0.0001)
    return clouds + sorted({o.cloud for o in onprem})


def _nothing_found(
    catalog: Catalog, name: str, count: float | None, clouds: list[str], region: str | None
) -> str:
    what = f"{name}:{count:g}" if count else name
    where = f" in {region}" if region else ""
    elsewhere = catalog.accelerator_clouds(name)
    text = f"No {what} offers on {', '.join(clouds)}{where}."
    if elsewhere:
        text += f" SkyPilot's catalog lists {name} on: {', '.join(elsewhere)}."
    return text
