"""bench/compat_check.py keeps running against the loader it measures: it counted every file
of the corpus as a crash once load_task's arguments changed, and nothing noticed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import CORPUS, needs_corpus

REPO = Path(__file__).resolve().parents[2]


@needs_corpus
def test_the_compat_tally_runs_on_the_corpus_and_nothing_crashes():
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "compat_check.py"), str(CORPUS)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    tally = next(line for line in proc.stdout.splitlines() if " files in " in line)
    counts = dict(
        (kind.strip(), int(n))
        for kind, n in (p.rsplit(" ", 1) for p in tally.split(": ")[1].split(", "))
    )
    assert counts["crash"] == 0
    assert counts["ok"] + counts["ok+values"] >= 100  # most of SkyPilot's examples plan as they are
