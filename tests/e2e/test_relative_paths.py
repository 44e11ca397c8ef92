"""Relative `workdir` and file mount sources start at the current directory, as `sky launch`
resolves them (os.path.abspath), not at the task file's folder; the plan records them
absolute (recording them from that directory: test_portable_plans.py), and a saved plan
applies from any directory."""

from __future__ import annotations

import json

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e


def _node_lines(output: str) -> list[str]:
    return [line.split(") ", 1)[1] for line in output.splitlines() if "node=0) " in line]


def _repo(tmp_path):
    """SkyPilot's layout: the task under llm/example/, its code named from the repo root."""
    (tmp_path / "llm" / "example" / "code").mkdir(parents=True)
    (tmp_path / "llm" / "example" / "code" / "train.py").write_text("print('from the code')\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.txt").write_text("input data\n")
    return task_file(
        tmp_path / "llm" / "example",
        "task.yaml",
        "name: rel\nresources: {infra: local}\nworkdir: llm/example/code\n"
        "file_mounts:\n  ~/in.txt: ./data/in.txt\n"
        "run: cat train.py ~/in.txt\n",
    )


def test_relative_paths_start_where_skyform_runs_and_the_plan_records_them(sky, tmp_path):
    task = _repo(tmp_path)
    sky("plan", "llm/example/task.yaml", "-o", "rel.json", check=0)
    plan = json.loads((tmp_path / "rel.json").read_text())
    job = plan["tasks"][0]["job"]
    # recorded from the directory plan ran in, and that directory from the plan file's
    # (tests/e2e/test_portable_plans.py: the plan applies in a clone elsewhere)
    assert job["workdir"] == "llm/example/code"
    assert job["file_mounts"]["~/in.txt"]["source"] == "data/in.txt"
    assert plan["task"]["relative_to"] == "."
    shown = sky("show", "rel.json", check=0).stdout  # the reviewer reads them absolute
    assert f"workdir     = {tmp_path / 'llm' / 'example' / 'code'}" in shown

    # applied from another directory: the task file is read again from where it was planned
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    applied = sky("apply", str(tmp_path / "rel.json"), cwd=elsewhere, timeout=300, check=0)
    assert _node_lines(applied.stdout)[:2] == ["print('from the code')", "input data"]
    sky("down", "-y", "rel", check=0)
    assert task.exists()


def test_a_path_that_is_only_beside_the_task_file_is_named_with_the_fix(sky, tmp_path):
    folder = tmp_path / "proj"
    (folder / "code").mkdir(parents=True)
    task_file(folder, "task.yaml", "resources: {infra: local}\nworkdir: ./code\nrun: ls\n")
    result = sky("plan", "proj/task.yaml", check=1)
    assert "workdir './code' does not exist (relative paths start at the current " in (
        result.stderr
    )
    assert f"It exists beside the task file, at {folder / 'code'}." in result.stderr
    assert f"(cd {folder})" in result.stderr
    # from the task file's folder it plans (as `sky launch` would from there)
    sky("plan", "task.yaml", cwd=folder, check=0)


def test_a_mount_source_only_beside_the_task_file_is_named_too(sky, tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "in.txt").write_text("x\n")
    task_file(
        folder,
        "task.yaml",
        "resources: {infra: local}\nfile_mounts:\n  ~/in.txt: in.txt\nrun: ls\n",
    )
    result = sky("plan", "proj/task.yaml", check=1)
    assert "file mount source 'in.txt' does not exist" in result.stderr
    assert f"It exists beside the task file, at {folder / 'in.txt'}." in result.stderr
