"""File-mount destinations and env names are checked when a plan is loaded (issue 26), by
the rules the task loader uses: such a plan provisioned, failed and left INIT before.

The edits are resealed (every digest recomputed) and empty the plan's secret names, which
once skipped the task-file check: the loader alone has to refuse them, in `show` too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from realplans import reseal, write_json

TASK = "name: hello\nresources: {infra: local}\nsecrets: {TOKEN: null}\nrun: echo hi\n"
DESTINATIONS = {
    "../../outside": "contains '..'",
    "~/ok/../../outside": "contains '..'",
    "~root/.ssh/authorized_keys": "'~user' paths are not supported",
    "~/data/": "ends with '/'",
    "s3://bucket/x": "must be a path on the node",
    "": "must be a path on the node",
    "~/a\nb": "contains a NUL byte or a line break",
}
ENV_NAMES = ["A-B; touch pwned", "1X", "PATH=x", "名前", "", "X Y"]


@pytest.fixture
def plan(cli, tmp_path, monkeypatch) -> Path:
    task = tmp_path / "t.yaml"
    task.write_text(TASK)
    out = tmp_path / "plan.json"
    assert cli("plan", task, "--secret", "TOKEN=x", "-o", out).exit_code == 0
    monkeypatch.setenv("SKYFORM_HOME", str(tmp_path / "ci-home"))  # empty, as on CI
    return out


def _edited(plan: Path, **job) -> Path:
    raw = json.loads(plan.read_text())
    raw["tasks"][0]["job"].update({"secrets": [], **job})
    return write_json(plan.with_name("edited.json"), reseal(raw))


def _refused_everywhere(cli, path: Path, where: str, what: str) -> None:
    for verb in (("show",), ("show", "--markdown"), ("apply", "-y")):
        result = cli(*verb, path)
        assert result.exit_code == 1, (verb, result.output)
        assert f"plan is corrupt or was edited: {where}: " in result.stderr, verb
        assert what in result.stderr, verb
    home = path.parent / "ci-home"
    assert not home.exists()  # no state (no INIT record), no lock, no cluster directory


@pytest.mark.parametrize("dst", DESTINATIONS, ids=repr)
def test_a_mount_destination_no_task_file_could_give_is_refused_at_load(cli, plan, dst):
    path = _edited(plan, file_mounts={dst: {"source": "t.yaml"}})
    _refused_everywhere(cli, path, "tasks.0.job.file_mounts", DESTINATIONS[dst])


@pytest.mark.parametrize("name", ENV_NAMES, ids=repr)
@pytest.mark.parametrize("kind", ["envs", "secrets"])
def test_an_env_name_no_shell_takes_is_refused_at_load(cli, plan, name, kind):
    values = {name: "1"} if kind == "envs" else [name]
    path = _edited(plan, **{kind: values})
    _refused_everywhere(cli, path, f"tasks.0.job.{kind}", "is not an environment variable name")
