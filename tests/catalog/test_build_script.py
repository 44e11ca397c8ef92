"""scripts/build_catalog.py: deterministic output, and the committed bundle is up to date."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO.parent / "shared" / "catalog"
SCRIPT = REPO / "scripts" / "build_catalog.py"

needs_source = pytest.mark.skipif(
    not (SOURCE / "aws_vms.csv").exists(), reason="../shared/catalog is not beside the repo"
)


def _build(out: Path) -> dict[str, bytes]:
    cmd = [sys.executable, str(SCRIPT), "--source", str(SOURCE), "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


@needs_source
def test_two_builds_give_identical_bytes(tmp_path):
    first, second = _build(tmp_path / "a"), _build(tmp_path / "b")
    assert first == second
    assert "manifest.json" in first and "gcp_vms.csv.gz" in first


@needs_source
def test_committed_bundle_matches_the_source():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + " (run scripts/build_catalog.py)"
