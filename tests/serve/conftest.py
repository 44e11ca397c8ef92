"""Serve tests import their helpers (lbkit, replica_app) from this folder."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def fresh_event_loop_policy():
    """asyncio.run() leaves "no current event loop" behind, and later tests in the same
    worker (Pulumi's mocks) call asyncio.get_event_loop(): give them a fresh policy."""
    yield
    asyncio.set_event_loop_policy(None)
