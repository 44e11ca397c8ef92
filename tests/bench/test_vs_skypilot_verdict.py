"""bench/vs_skypilot.py's verdict: which issue-17 targets a case misses, and the exit status
(the lead's closing note relies on a non-zero exit when one is missed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def vs():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("vs_skypilot", BENCH / "vs_skypilot.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        while str(BENCH) in sys.path:  # vs_skypilot.py puts it there too
            sys.path.remove(str(BENCH))


def mine(wall=0.1, optimizer=0.01, total=1.0):
    return {"wall_s": wall, "optimizer_s": optimizer, "total": total}


def theirs(cold=3.0, warm=0.2, total=1.0):
    return {"cold_s": cold, "warm_s": warm, "total": total}


def test_a_case_meeting_every_target_misses_nothing(vs):
    assert vs.verdicts("a100x8", mine(wall=0.1), theirs(cold=2.5, warm=0.2)) == []
    lines, status = vs.conclusion([])
    assert status == 0
    assert lines[-1] == "all targets met"


def test_in_process_below_10x_is_missed_on_a_dag(vs):
    missed = vs.verdicts("dag20", mine(optimizer=0.3), theirs(warm=2.7))
    assert missed == ["in process 9.0x < 10x"]


def test_whole_process_counts_only_for_single_task_cases(vs):
    slow = mine(wall=0.5)
    assert vs.verdicts("cpus4", slow, theirs(cold=2.5)) == ["whole process 5.0x < 20x"]
    assert vs.verdicts("dag5", slow, theirs(cold=2.5)) == []


def test_a_dearer_placement_than_skypilots_is_missed(vs):
    missed = vs.verdicts("chain3", mine(total=4.2), theirs(total=4.0))
    assert missed == ["cost $4.2000 > SkyPilot's $4.0000"]
    assert vs.verdicts("chain3", mine(total=4.0), theirs(total=4.0)) == []


def test_skypilot_not_finishing_is_a_miss(vs):
    assert vs.verdicts("dag20", mine(), {"error": ["Traceback"]}) == ["SkyPilot did not finish"]


def test_any_miss_makes_the_exit_status_non_zero(vs):
    lines, status = vs.conclusion(["dag20: in process 9.0x < 10x"])
    assert status == 1
    assert "  MISSED dag20: in process 9.0x < 10x" in lines
    assert lines[-1] == "1 target(s) missed"
