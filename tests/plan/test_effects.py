"""What apply does with a change comes from its typed fields, never from its attribute lines
(plan/model.py: `reason` and `attributes` are for people). Each case strips the attributes
and rewords the reason, and asks the same questions apply asks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from factory import spec

from skyform.plan.diff import CurrentCluster, diff_cluster
from skyform.plan.effects import in_place_updates, job_runs_again, stack_updates
from skyform.plan.model import AutostopSetting, ClusterChange, WorkdirFiles
from skyform.plan.planfile import parse_plan, plan_bytes

SKYFORM = Path(__file__).resolve().parents[2] / "skyform"
# the modules that carry out a plan: apply/launch and the lifecycle they converge through
APPLY_SIDE = sorted([*SKYFORM.glob("ops/appl*.py"), *SKYFORM.glob("lifecycle/*.py")])


def _blind(change: ClusterChange) -> ClusterChange:
    return change.model_copy(update={"attributes": [], "reason": "reworded for people"})


def _effects(change: ClusterChange):
    return in_place_updates(change), stack_updates(change), job_runs_again(change)


FILES_V1 = WorkdirFiles(files={"main.py": "aa"})
FILES_V2 = WorkdirFiles(files={"main.py": "bb"})

CASES = {
    "ports only": (spec(ports=["8080"]), spec(), None, None, ({"ports"}, {"ports"}, False)),
    "autostop only": (
        spec(autostop=AutostopSetting(stop_after=10)),
        spec(),
        None,
        None,
        ({"autostop"}, set(), False),
    ),
    "run changed": (spec(job_digest="sha256:new"), spec(), None, None, (set(), set(), True)),
    "workdir files only": (spec(), spec(), FILES_V1, FILES_V2, (set(), set(), True)),
    "ports and workdir files": (
        spec(ports=["8080"]),
        spec(),
        FILES_V1,
        FILES_V2,
        ({"ports"}, {"ports"}, True),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_change_applies_the_same_without_its_attribute_lines(case):
    desired, before, files_before, files_now, expected = CASES[case]
    change = diff_cluster(
        desired,
        CurrentCluster(spec=before, workdir_files=files_before),
        workdir_files=files_now,
    )
    assert change.attributes, "the plan shows what changed"
    assert _effects(_blind(change)) == (*tuple(map(frozenset, expected[:2])), expected[2])


def test_a_plan_whose_workdir_is_as_synced_keeps_its_bytes():
    change = diff_cluster(spec(ports=["8080"]), CurrentCluster(spec=spec()))
    assert "workdir_changed" not in change.model_dump(mode="json")
    moved = diff_cluster(
        spec(), CurrentCluster(spec=spec(), workdir_files=FILES_V1), workdir_files=FILES_V2
    )
    assert moved.model_dump(mode="json")["workdir_changed"] is True


def test_an_older_plan_says_the_workdir_changed_only_in_its_attribute_line():
    """Plans written before `workdir_changed` existed still make the job run again."""
    from factory import placement
    from factory import plan as make_plan

    moved = diff_cluster(
        spec(), CurrentCluster(spec=spec(), workdir_files=FILES_V1), workdir_files=FILES_V2
    )
    older = moved.model_copy(update={"workdir_changed": False})
    data = plan_bytes(make_plan([older], [placement()], change=1, before=older.before.hourly_cost))
    assert b"workdir_changed" not in data
    assert job_runs_again(parse_plan(data, "old.json").changes[0])


@pytest.mark.parametrize("path", APPLY_SIDE, ids=lambda p: p.relative_to(SKYFORM).as_posix())
def test_apply_never_reads_attribute_lines(path: Path):
    tree = ast.parse(path.read_text())
    reads = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "attributes"
    ]
    assert not reads, f"{path.name} reads a change's attribute lines (for people) at {reads}"
