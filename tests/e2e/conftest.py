"""End-to-end helpers: an ssh pool in config.yaml made of real sshd nodes, task files, and
the CLI run as a separate process (as a user runs it)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from e2ekit import write_pool
from skyrun import Run, run_skyform


@pytest.fixture
def sky(skyform_home, tmp_path):
    """Run `skyform ...` in a subprocess with this test's SKYFORM_HOME; cwd = tmp_path unless
    given."""

    def run(*args, timeout: float = 120, check=None, cwd=None, stdin=None) -> Run:
        return run_skyform(
            skyform_home, *args, cwd=cwd or tmp_path, timeout=timeout, check=check, stdin=stdin
        )

    return run


@pytest.fixture
def pool(skyform_home, fresh_ssh_nodes):
    """All four session nodes as pool `lab` (region lab, on-demand)."""
    write_pool(skyform_home, fresh_ssh_nodes, range(4))
    return fresh_ssh_nodes


@pytest.fixture
def shared_ckpt():
    """A directory every node user can write: the test's stand-in for NFS or a bucket."""
    path = Path(tempfile.mkdtemp(prefix="skyform-ckpt-", dir="/tmp"))
    os.chmod(path, 0o777)  # no sticky bit: the next node's user rewrites the checkpoint
    yield path
    shutil.rmtree(path, ignore_errors=True)
