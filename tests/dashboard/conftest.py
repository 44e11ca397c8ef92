"""The dashboard tests: the real `skyform dashboard` (its own process, as a user starts it)
loaded in a real headless Chromium (Debian's chromium through chromium-driver)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from dashkit import Dashboard, make_browser, missing_browser
from skyrun import Run, run_skyform


@pytest.fixture
def browser():
    if missing_browser() is not None:
        pytest.skip(str(missing_browser()))
    driver = make_browser()
    yield driver
    driver.quit()


@pytest.fixture
def sky(skyform_home, tmp_path):
    def run(*args, timeout: float = 120, check=0) -> Run:
        return run_skyform(skyform_home, *args, cwd=tmp_path, timeout=timeout, check=check)

    return run


@pytest.fixture
def dashboard(skyform_home):
    """`start(*flags, env=...)` starts `skyform dashboard --port 0 FLAGS`; all stop after."""
    started: list[Dashboard] = []

    def start(*flags: str, env: dict[str, str] | None = None) -> Dashboard:
        board = Dashboard.start(skyform_home, list(flags), env or {})
        started.append(board)
        return board

    yield start
    for board in started:
        board.stop()
