"""The price catalog: offers from AWS/GCP price data, Kubernetes, this machine and ssh pools.

Light to import (no pydantic, rich, typer or pulp) so planning starts fast. Public API:

- `load_catalog(config=None, *, source=None) -> Catalog` and `load_fixture_catalog(csv, egress)`;
- `Catalog.query(...) -> list[Offer]`, `canonical_accelerator`, `suggest_accelerators`,
  `accelerator_names`, `regions`, `zones`, `image_for`, `offer(id)`, `.egress`, `.digest`,
  `.onprem_digest`, `.source`;
- `Offer`, `Location`, `EgressTable` (`cost`, `seconds`, `transfer`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skyform.plan.catalog.catalog import Catalog, CatalogSource, Image
from skyform.plan.catalog.egress import EgressTable, Transfer
from skyform.plan.catalog.load import BUNDLED_DIR, catalog_home, load_catalog
from skyform.plan.catalog.offer import Location, Offer

if TYPE_CHECKING:
    from skyform.plan.catalog.fixture import load_fixture_catalog

__all__ = [
    "BUNDLED_DIR",
    "Catalog",
    "CatalogSource",
    "EgressTable",
    "Image",
    "Location",
    "Offer",
    "Transfer",
    "catalog_home",
    "load_catalog",
    "load_fixture_catalog",
]


def __getattr__(name: str) -> Any:
    """`load_fixture_catalog` on first use: it parses CSVs (csv, gzip, the index builder),
    which loading an index never needs."""
    if name == "load_fixture_catalog":
        from skyform.plan.catalog.fixture import load_fixture_catalog

        return load_fixture_catalog
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
