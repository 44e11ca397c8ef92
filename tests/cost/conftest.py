"""Cost fixtures: the fixture catalog (and edited copies of it), plans made on it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # `import costkit` from the tests
from costkit import FIXTURES, tiny_catalog


@pytest.fixture(scope="session")
def tiny():
    return tiny_catalog(FIXTURES / "fixtures_tiny.csv")
