"""Every command README.md and examples/ show runs, with the outcome the docs promise.

The commands and their expected outcomes are listed in docs_commands.py (how to add one is
said there). Each scenario runs its lines with bash, as a user pastes them, on `local`;
commands that need a cloud run as far as a user without credentials gets.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from docs_commands import (
    ENGINE_SCENARIOS,
    REPO,
    SCENARIOS,
    documented_commands,
    run_step,
)
from helpers import sandboxes_exclusive


def test_every_documented_command_has_a_step():
    documented = documented_commands()
    scenarios = [*SCENARIOS.values(), *ENGINE_SCENARIOS.values()]
    covered = {s.doc for steps in scenarios for s in steps if s.doc is not None}
    missing = [c for c in documented if c not in covered]
    stale = sorted(covered - set(documented))
    assert not missing, f"documented but never run (add a Step in docs_commands.py): {missing}"
    assert not stale, f"steps for commands the docs no longer show: {stale}"


def test_the_extractor_finds_each_kind_of_documented_command():
    """Code-block lines, inline code (also after VAR=x and &&) and example comments."""
    found = documented_commands()
    assert "skyform plan task.yaml -o plan.json" in found  # a code block line, comment dropped
    assert "skyform check" in found  # inline code in prose
    assert "SKYFORM_HOME=ci-home skyform plan task.yaml -o plan.json" in found
    assert "skyform validate examples/gpu.yaml --secret HF_TOKEN" in found  # a yaml comment
    assert not [c for c in found if c.startswith(".venv/")]  # test_readme.py's section


def _path_without_pulumi() -> str:
    """PATH for a user who has not installed the Pulumi CLI (whatever this machine has)."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    kept = [d for d in dirs if not (Path(d) / "pulumi").exists()]
    return os.pathsep.join([str(Path(sys.executable).parent), *kept])


def _scratch(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    shutil.copytree(REPO / "examples", work / "examples")
    shutil.copy(REPO / "examples" / "hello.yaml", work / "task.yaml")
    (work / "ci-home").mkdir()
    return work


def _managed_jobs_settle(env: dict[str, str], work: Path, timeout: float = 90.0) -> None:
    """Leave no controller running behind the test."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = subprocess.run(
            ["skyform", "jobs", "queue", "--json"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        jobs = json.loads(proc.stdout or "[]")
        if all(j["status"] in ("SUCCEEDED", "CANCELLED", "FAILED") for j in jobs):
            return
        time.sleep(0.5)
    raise AssertionError(f"managed jobs still running: {proc.stdout}")


@pytest.mark.e2e
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_documented_commands_run(scenario, skyform_home, tmp_path):
    with contextlib.ExitStack() as held:
        if scenario == "serve_up":
            held.enter_context(sandboxes_exclusive())
        _run_scenario(scenario, skyform_home, tmp_path)


def _run_scenario(scenario, skyform_home, tmp_path):
    if scenario == "serve_up":
        from skyform.serve import sandbox

        if sandbox.available() is not None:
            pytest.skip(f"serve up needs network namespaces: {sandbox.available()}")
    work = _scratch(tmp_path)
    (skyform_home / "config.yaml").write_text("recovery: {check_interval: 0.5}\n")
    env = dict(
        os.environ,
        SKYFORM_HOME=str(skyform_home),
        PATH=_path_without_pulumi(),
        HF_TOKEN="hf_docs_example",
        COLUMNS="200",
        NO_COLOR="1",
    )
    try:
        for step in SCENARIOS[scenario]:
            for line in step.lines:
                run_step(step, line, work, env)
    finally:
        _managed_jobs_settle(env, work)
        if scenario == "serve_up":  # a failed step must not leave a service running
            subprocess.run(
                ["skyform", "serve", "down", "-a", "-y", "--purge"],
                cwd=work, env=env, capture_output=True, stdin=subprocess.DEVNULL,
            )  # fmt: skip
