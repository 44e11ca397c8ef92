"""bench/compat_plan.py counts how many of SkyPilot's examples `skyform plan` places here and
gives every other file one reason; it keeps running against the planner it measures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import CORPUS, CORPUS_FILES, needs_corpus

REPO = Path(__file__).resolve().parents[2]


@needs_corpus
def test_every_corpus_file_plans_or_has_one_reason_and_nothing_crashes():
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "compat_plan.py"), str(CORPUS), "--json"],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    found = json.loads(proc.stdout)
    assert len(found["files"]) == len(CORPUS_FILES)
    assert found["tally"].get("crash", 0) == 0
    assert found["tally"]["plans"] >= 97  # measured 2026-12: 97 of the 165 SkyPilot accepts
    for name, (kind, detail) in found["files"].items():
        assert kind == "plans" or detail.strip(), name
