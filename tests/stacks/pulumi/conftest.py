"""Fixtures for the Pulumi engine's tests; helpers here are importable as plain modules."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from kubecluster.fixtures import engine_bin_dir  # noqa: F401  (the real CLI's tests)

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # `import pulumi_harness`, `import pulumi_specs`


class StandIn:
    """The recording `pulumi` stand-in, first on PATH for one test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log = root / "calls.jsonl"
        self.state = root / "state.json"
        self.scenario_file = root / "scenario.json"
        self.scenario()

    def scenario(self, **values) -> None:
        self.scenario_file.write_text(json.dumps(values))

    def calls(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def commands(self) -> list[list[str]]:
        """Each call's argv without the per-run details (ports, temp paths, --stack)."""
        out = []
        for call in self.calls():
            argv, skip = [], False
            for arg in call["argv"]:
                if skip:
                    skip = False
                    continue
                if arg in ("--event-log", "--stack"):
                    skip = True
                    continue
                if arg.startswith("--client="):
                    continue
                argv.append(arg)
            out.append(argv)
        return out

    def stacks(self) -> dict:
        return json.loads(self.state.read_text())["stacks"] if self.state.exists() else {}


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StandIn:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "pulumi"
    script = HERE / "standin" / "pulumi_standin.py"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    fake = StandIn(tmp_path)
    monkeypatch.setenv("STANDIN_LOG", str(fake.log))
    monkeypatch.setenv("STANDIN_STATE", str(fake.state))
    monkeypatch.setenv("STANDIN_SCENARIO", str(fake.scenario_file))
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    return fake


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Provider SDKs warn about their own deprecated resources when imported; not ours to fix.
    quiet = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_")
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(quiet)
