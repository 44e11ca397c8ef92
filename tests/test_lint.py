"""ruff keeps the tree clean; run as a test so the one test command covers it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    exe = Path(sys.executable).with_name("ruff")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("ruff")
    if not found:
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    return [found]


def test_ruff_check():
    proc = subprocess.run([*_ruff(), "check", "."], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format():
    proc = subprocess.run(
        [*_ruff(), "format", "--check", "."], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
