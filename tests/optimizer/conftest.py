"""Optimizer fixtures: the fictional fixture catalog and the bundled catalog."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from skyform.config import Config
from skyform.plan.catalog import BUNDLED_DIR, Catalog, load_catalog, load_fixture_catalog

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(Path(__file__).parent))  # `import optimizer_helpers` from the tests


@pytest.fixture(scope="session")
def tiny() -> Catalog:
    return load_fixture_catalog(
        FIXTURES / "fixtures_tiny.csv", FIXTURES / "fixtures_tiny_egress.csv"
    )


@pytest.fixture(scope="session")
def bundled() -> Catalog:
    return load_catalog(Config(), source=BUNDLED_DIR)
