"""The task path a plan records is untrusted (issue 26): `apply` reads it through the bounded
reader, regular files only. A FIFO there hung apply, `/dev/zero` grew it to 23.6 GB.

Each case runs the real CLI in its own process, with a time limit and a memory limit, so
the code before the fix fails the test (timeout, MemoryError) instead of the machine."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from realplans import reseal, write_json

MEMORY_LIMIT = 2 * 1024**3  # bytes of address space: far above what apply needs


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _apply(plan: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SKYFORM_HOME=str(home), NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "skyform.cli.main", "apply", str(plan), "-y"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=20,
        preexec_fn=_limited,
        cwd=plan.parent,
    )


@pytest.mark.parametrize("kind", ["fifo", "device", "huge file"])
def test_a_task_path_that_is_no_regular_file_is_refused_at_once(cli, tmp_path, kind):
    task = tmp_path / "t.yaml"
    task.write_text("name: hello\nresources: {infra: local}\nrun: echo hi\n")
    plan = tmp_path / "plan.json"
    assert cli("plan", task, "-o", plan).exit_code == 0
    if kind == "fifo":
        target = tmp_path / "fifo"
        os.mkfifo(target)  # nobody ever writes to it
    elif kind == "device":
        target = Path("/dev/zero")
    else:
        target = tmp_path / "huge.yaml"
        with target.open("wb") as f:
            f.truncate(30 * 1024**3)  # sparse: 30 GB of zeros that take no disk
    raw = json.loads(plan.read_text())
    raw["task"]["path"] = str(target)
    edited = write_json(tmp_path / "edited.json", reseal(raw))
    home = tmp_path / "home"
    started = time.monotonic()
    result = _apply(edited, home)
    assert time.monotonic() - started < 15
    assert result.returncode == 1, result.stdout + result.stderr
    assert str(target) in result.stderr
    wanted = "larger than" if kind == "huge file" else "not a regular file"
    assert wanted in result.stderr, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert not home.exists()  # refused before any state, lock or directory
