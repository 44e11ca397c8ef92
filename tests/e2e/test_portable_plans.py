"""A plan is planned in one checkout and applied from a clean clone at another path (the team
workflow: plan in a pull request on a laptop, commit plan.json, `plan --check` and `apply`
it in CI). Relative paths start at the current directory (as `sky launch` resolves them);
the plan records that directory relative to itself, as it records the task path."""

from __future__ import annotations

import json
import shutil

import pytest
from e2ekit import task_file

from skyform.plan.planjson import DIGEST_KEY, dumps, plan_digest

pytestmark = pytest.mark.e2e


def _node_lines(output: str) -> list[str]:
    return [line.split(") ", 1)[1] for line in output.splitlines() if "node=0) " in line]


def _checkout(root):
    """A repository with the task in a subfolder and its code named from the repo root."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text("print('the repo code')\n")
    (root / "data").mkdir()
    (root / "data" / "in.txt").write_text("repo data\n")
    (root / "jobs").mkdir()
    task_file(
        root / "jobs",
        "train.yaml",
        "name: portable\nresources: {infra: local}\nworkdir: ./src\n"
        "file_mounts:\n  ~/in.txt: ./data/in.txt\nrun: cat train.py ~/in.txt\n",
    )
    return root


def test_a_plan_made_in_one_checkout_checks_and_applies_in_a_clone_elsewhere(sky, tmp_path):
    laptop = _checkout(tmp_path / "home" / "alice" / "repo")
    sky("plan", "jobs/train.yaml", "-o", "plan.json", cwd=laptop, check=0)
    text = (laptop / "plan.json").read_text()
    assert str(laptop) not in text  # nothing in the committed plan names the laptop's path
    plan = json.loads(text)
    assert plan["task"]["relative_to"] == "."
    assert plan["tasks"][0]["job"]["workdir"] == "src"

    ci = tmp_path / "ci" / "build" / "repo"
    shutil.copytree(laptop, ci)
    shutil.rmtree(laptop)  # CI's clone is all there is
    checked = sky("plan", "jobs/train.yaml", "--check", "plan.json", cwd=ci)
    assert checked.exit_code == 0, checked.output
    assert "is up to date" in checked.stdout
    # the reviewer reads absolute paths, from the checkout the plan is read in
    shown = sky("show", "plan.json", cwd=ci, check=0)
    assert f"workdir     = {ci / 'src'}" in shown.stdout
    assert f"~/in.txt <- {ci / 'data' / 'in.txt'}" in shown.stdout

    applied = sky("apply", "plan.json", "-y", cwd=ci, timeout=300, check=0)
    assert _node_lines(applied.stdout)[:2] == ["print('the repo code')", "repo data"]
    sky("down", "-y", "portable", check=0)


def test_a_plan_saved_in_a_subfolder_records_the_base_from_there(sky, tmp_path):
    repo = _checkout(tmp_path / "repo")
    (repo / "plans").mkdir()
    sky("plan", "jobs/train.yaml", "-o", "plans/train.json", cwd=repo, check=0)
    plan = json.loads((repo / "plans" / "train.json").read_text())
    assert plan["task"]["relative_to"] == ".."
    assert plan["task"]["path"] == "../jobs/train.yaml"
    # from any directory: the base is found from the plan file, not from where apply runs
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    applied = sky("apply", str(repo / "plans" / "train.json"), "-y", cwd=elsewhere, timeout=300)
    assert applied.exit_code == 0, applied.output
    assert _node_lines(applied.stdout)[:2] == ["print('the repo code')", "repo data"]
    sky("down", "-y", "portable", check=0)


def _edited(path, **task_fields) -> None:
    """The plan with `task_fields` changed and its content digest made again (an edit that
    the digest alone does not catch)."""
    plan = json.loads(path.read_text())
    plan["task"].update(task_fields)
    _write_with_digest(path, plan)


def _write_with_digest(path, plan: dict) -> None:
    plan.pop(DIGEST_KEY)
    plan[DIGEST_KEY] = plan_digest(dumps(plan))
    path.write_bytes(dumps(plan))


def test_a_base_that_is_not_there_is_named_with_the_plan_file_and_field(sky, tmp_path):
    repo = _checkout(tmp_path / "repo")
    sky("plan", "jobs/train.yaml", "-o", "plan.json", cwd=repo, check=0)
    _edited(repo / "plan.json", relative_to="gone")
    refused = sky("apply", "plan.json", "-y", cwd=repo)
    assert refused.exit_code != 0
    assert "plan.json: task.relative_to: 'gone' names" in refused.stderr
    assert f"{repo / 'gone'}, where the task's relative paths start" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert sky("status", cwd=repo).stdout.count("portable") == 0  # nothing was made


def _as_previous_format(path, base) -> None:
    """The plan as the previous release wrote it: its base and the paths inside it absolute, and
    the digests over those (checked by hand against a plan that release wrote: the same
    bytes)."""
    from skyform.plan.jobdigest import with_digests
    from skyform.plan.model import JobSpec
    from skyform.spec import load_task, task_digest
    from skyform.spec.inputs import TaskInputs

    plan = json.loads(path.read_text())
    plan["task"]["relative_to"] = str(base)
    for placement in plan["tasks"]:
        job = placement["job"]
        job["workdir"] = str(base / job["workdir"])
        for mount in job["file_mounts"].values():
            mount["source"] = str(base / mount["source"])
        placement["job"] = with_digests(JobSpec.model_validate(job)).model_dump(mode="json")
        for change in plan["changes"]:
            if change["cluster"] == placement["cluster"]:
                change["after"]["job_digest"] = placement["job"]["job_digest"]
    dag = load_task(path.parent / plan["task"]["path"], TaskInputs(base_dir=str(base)))
    plan["task"]["digest"] = "sha256:" + task_digest(dag)
    _write_with_digest(path, plan)


def test_a_plan_of_the_previous_format_still_applies_and_check_says_why_it_differs(sky, tmp_path):
    repo = _checkout(tmp_path / "repo")
    sky("plan", "jobs/train.yaml", "-o", "plan.json", cwd=repo, check=0)
    _as_previous_format(repo / "plan.json", repo)
    checked = sky("plan", "jobs/train.yaml", "--check", "plan.json", cwd=repo, check=2)
    assert f"the plan records the task's relative paths absolute (from {repo})" in checked.output
    assert "the task's inputs changed" not in checked.output  # the format explains it
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    applied = sky("apply", str(repo / "plan.json"), "-y", cwd=elsewhere, timeout=300)
    assert applied.exit_code == 0, applied.output
    assert _node_lines(applied.stdout)[:2] == ["print('the repo code')", "repo data"]
    sky("down", "-y", "portable", check=0)


def test_a_plan_made_with_workdir_flag_checks_in_a_clone_elsewhere(sky, tmp_path):
    """`--workdir DIR` names a directory from where skyform runs, as `sky launch --workdir`
    does: recorded like the task file's own relative paths."""
    laptop = _checkout(tmp_path / "laptop" / "repo")
    (laptop / "jobs" / "flag.yaml").write_text("resources: {infra: local}\nrun: cat train.py\n")
    sky("plan", "jobs/flag.yaml", "--workdir", "src", "-o", "flag.json", cwd=laptop, check=0)
    assert str(laptop) not in (laptop / "flag.json").read_text()
    ci = tmp_path / "ci" / "repo"
    shutil.copytree(laptop, ci)
    checked = sky("plan", "jobs/flag.yaml", "--workdir", "src", "--check", "flag.json", cwd=ci)
    assert checked.exit_code == 0, checked.output
    applied = sky("apply", "flag.json", "-y", cwd=ci, timeout=300)
    assert applied.exit_code == 0, applied.output
    assert _node_lines(applied.stdout)[:1] == ["print('the repo code')"]
    sky("down", "-y", "flag", check=0)
