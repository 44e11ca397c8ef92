"""End-to-end helpers: an ssh pool in config.yaml made of real sshd nodes, task files, and
the CLI run as a separate process (as a user runs it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from e2ekit import write_pool


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@pytest.fixture
def sky(skyform_home, tmp_path):
    """Run `skyform ...` in a subprocess with this test's SKYFORM_HOME; cwd = tmp_path unless
    given."""

    def run(*args, timeout: float = 120, check: int | None = None, cwd=None) -> Run:
        env = dict(os.environ, SKYFORM_HOME=str(skyform_home), COLUMNS="200", NO_COLOR="1")
        proc = subprocess.run(
            [sys.executable, "-m", "skyform.cli.main", *map(str, args)],
            capture_output=True,
            text=True,
            cwd=cwd or tmp_path,
            env=env,
            timeout=timeout,
        )
        result = Run(proc.returncode, proc.stdout, proc.stderr)
        if check is not None:
            assert result.exit_code == check, result.output
        return result

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
