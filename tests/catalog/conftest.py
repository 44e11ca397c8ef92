"""Catalog fixtures: the bundled catalog (loaded once) and the fictional fixture catalog."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from skyform.config import Config
from skyform.plan.catalog import BUNDLED_DIR, Catalog, load_catalog, load_fixture_catalog

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="session")
def bundled() -> Catalog:
    return load_catalog(Config(), source=BUNDLED_DIR)


@pytest.fixture(scope="session")
def tiny() -> Catalog:
    return load_fixture_catalog(
        FIXTURES / "fixtures_tiny.csv", FIXTURES / "fixtures_tiny_egress.csv"
    )


def bundled_text(name: str) -> str:
    """A bundled table's CSV text (e.g. `aws_vms.csv`)."""
    return gzip.decompress((BUNDLED_DIR / f"{name}.gz").read_bytes()).decode()


@pytest.fixture
def catalog_copy(tmp_path: Path) -> Path:
    """A writable copy of the bundled tables as plain CSV files (the bundle's file names)."""
    out = tmp_path / "catalog-src"
    out.mkdir()
    for path in BUNDLED_DIR.glob("*.csv.gz"):
        (out / path.name[: -len(".gz")]).write_text(bundled_text(path.name[: -len(".gz")]))
    return out
