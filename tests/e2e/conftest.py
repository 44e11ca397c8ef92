"""End-to-end helpers: an ssh pool in config.yaml made of real sshd nodes, task files, and
the CLI run as a separate process (as a user runs it)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from e2ekit import write_pool

STANDIN = Path(__file__).resolve().parents[1] / "stacks" / "pulumi" / "standin"


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

    def run(
        *args,
        timeout: float = 120,
        check: int | None = None,
        cwd=None,
        stdin: str | None = None,
    ) -> Run:
        env = dict(os.environ, SKYFORM_HOME=str(skyform_home), COLUMNS="200", NO_COLOR="1")
        proc = subprocess.run(
            [sys.executable, "-m", "skyform.cli.main", *map(str, args)],
            # as in CI: never a terminal that a prompt could wait on (or the given input)
            stdin=subprocess.DEVNULL if stdin is None else None,
            input=stdin,
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


@pytest.fixture
def pulumi_standin(tmp_path, monkeypatch):
    """The recording `pulumi` stand-in first on PATH (for this process and the ones it
    starts); its scenario is tmp_path/standin-scenario.json, its stacks standin-state.json."""
    bin_dir = tmp_path / "pulumi-bin"
    bin_dir.mkdir()
    exe = bin_dir / "pulumi"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STANDIN / "pulumi_standin.py"}" "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for name in ("LOG", "STATE", "SCENARIO"):
        monkeypatch.setenv(f"STANDIN_{name}", str(tmp_path / f"standin-{name.lower()}.json"))
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    return tmp_path
