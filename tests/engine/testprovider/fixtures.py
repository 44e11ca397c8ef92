"""pytest fixtures for the AWS and GCP engine tests, used from tests/engine/conftest.py:
`test_cloud` (the test provider where the engine finds it, machines for its instances) and
`sky` (the CLI as a user runs it)."""

from __future__ import annotations

import pytest
from skyrun import Run, run_skyform

from testprovider.harness import TestCloud


@pytest.fixture
def test_cloud(engine_bin_dir, tmp_path, monkeypatch):
    """The test provider on PATH for the real engine, with machines for its instances; the
    environment (this process's, so the CLI runs it starts) leads the engine to it."""
    made = TestCloud(engine_bin_dir, tmp_path / "testcloud", machines=True)
    for name, value in made.env.items():
        monkeypatch.setenv(name, value)
    yield made
    made.close()


@pytest.fixture
def sky(skyform_home, tmp_path):
    """`skyform ARGS...` in a process of its own with this test's SKYFORM_HOME, in tmp_path;
    a non-zero exit fails the test unless `check` says otherwise."""

    def run(*args, timeout: float = 300, check: int | None = 0) -> Run:
        return run_skyform(skyform_home, *args, cwd=tmp_path, timeout=timeout, check=check)

    return run
