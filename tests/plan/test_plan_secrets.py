"""Secrets by name (issue 26): every plan is checked against its task file whatever it
declares, `plan` needs no secret value, `apply` needs every one — and a refusal, for an
edit or for a missing value, comes before anything is created."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from realplans import reseal, write_json

TASK = (
    "name: hello\nresources: {infra: local}\nsecrets: {TOKEN: null}\n"
    'run: echo "token has ${#TOKEN} characters"\n'
)


@pytest.fixture
def fresh_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "ci-home"
    monkeypatch.setenv("SKYFORM_HOME", str(home))
    return home


@pytest.fixture
def task(tmp_path) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(TASK)
    return path


def _nothing_created(home: Path) -> None:
    assert not home.exists() or sorted(p.name for p in home.iterdir()) == []


def _edited(plan: Path, **job) -> Path:
    raw = json.loads(plan.read_text())
    raw["tasks"][0]["job"].update(job)
    return write_json(plan.with_name("edited.json"), reseal(raw))


@pytest.mark.parametrize("value", ["none", "--secret", "environment"])
def test_an_edit_with_the_secret_names_emptied_is_refused(
    cli, task, fresh_home, monkeypatch, value
):
    plan = task.with_name("plan.json")
    assert cli("plan", task, "-o", plan).exit_code == 0
    edited = _edited(plan, run="touch pwned", secrets=[])
    assert "touch pwned" in cli("show", edited).stdout  # a consistent plan: only the file tells
    flags = ["--secret", "TOKEN=abc"] if value == "--secret" else []
    if value == "environment":
        monkeypatch.setenv("TOKEN", "abc")
    result = cli("apply", edited, "-y", *flags)
    assert result.exit_code == 1, result.output
    assert "plan is corrupt or was edited: tasks.0.job.run: not what the task file" in (
        result.stderr
    )
    _nothing_created(fresh_home)
    assert not (task.parent / "pwned").exists()


def test_only_the_secret_names_emptied_is_refused_too(cli, task, fresh_home):
    plan = task.with_name("plan.json")
    assert cli("plan", task, "-o", plan).exit_code == 0
    result = cli("apply", _edited(plan, secrets=[]), "-y", "--secret", "TOKEN=abc")
    assert result.exit_code == 1, result.output
    assert "tasks.0.job.secrets: not what the task file" in result.stderr
    _nothing_created(fresh_home)


def test_plan_needs_no_secret_value_and_apply_needs_it(cli, task, fresh_home, monkeypatch):
    """CI plans a pull request without the secrets; the plan is the one a plan with the value
    makes (names only); apply without the value says which and how, and creates nothing."""
    without, given = task.with_name("without.json"), task.with_name("given.json")
    planned = cli("plan", task, "-o", without)
    assert planned.exit_code == 0, planned.output
    assert cli("plan", task, "--secret", "TOKEN=abc", "-o", given).exit_code == 0
    assert without.read_bytes() == given.read_bytes()
    assert json.loads(without.read_text())["tasks"][0]["job"]["secrets"] == ["TOKEN"]
    home_after_plan = sorted(p.name for p in fresh_home.iterdir()) if fresh_home.exists() else []

    refused = cli("apply", without, "-y")
    assert refused.exit_code == 1, refused.output
    assert "secret 'TOKEN' has no value" in refused.stderr
    assert "--secret TOKEN=VALUE" in refused.stderr and "export TOKEN" in refused.stderr
    now = sorted(p.name for p in fresh_home.iterdir()) if fresh_home.exists() else []
    assert now == home_after_plan and "state.db" not in now

    monkeypatch.setenv("TOKEN", "abcdef")
    applied = cli("apply", without, "-y")
    assert applied.exit_code == 0, applied.output
    assert "token has 6 characters" in applied.stdout


def test_a_secret_used_in_a_path_needs_its_value_to_plan(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    task = tmp_path / "t.yaml"
    (tmp_path / "data").mkdir()
    task.write_text(
        "name: p\nresources: {infra: local}\nsecrets: {SUB: null}\n"
        "file_mounts:\n  ~/in/${SUB}: ./data\nrun: ls\n"
    )
    result = cli("plan", task)
    assert result.exit_code == 1
    assert "secret 'SUB' has no value, and file_mounts uses it" in result.stderr
    assert "--secret SUB=VALUE" in result.stderr
    planned = cli("plan", task, "--secret", "SUB=x")
    assert planned.exit_code == 0, planned.output
    assert "${SUB}" in planned.stdout


def test_jobs_launch_checks_a_plan_against_its_task_file(cli, task, fresh_home):
    plan = task.with_name("plan.json")
    assert cli("plan", task, "-o", plan).exit_code == 0
    edited = _edited(plan, run="touch pwned", secrets=[])
    result = cli("jobs", "launch", edited, "-y", "--secret", "TOKEN=abc")
    assert result.exit_code == 1, result.output
    assert "plan is corrupt or was edited: tasks.0.job.run" in result.stderr
    _nothing_created(fresh_home)
