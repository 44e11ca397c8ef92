"""What a plan says about the job on an existing cluster (on `local` infra): edited workdir
code makes the job run again and says how many files; a changed `run:` shows its old and
new lines in text and markdown, not two digests."""

from __future__ import annotations

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e

TASK = """\
name: code
workdir: ./proj
resources: {infra: local}
run: |
  cat main.py
  echo done
"""


def test_edited_workdir_code_is_noticed_and_the_job_runs_again(sky, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "main.py").write_text("print('v1')\n")
    (proj / ".skyignore").write_text("scratch/\n")
    task = task_file(tmp_path, "code.yaml", TASK)
    first = sky("apply", task, "-y", check=0)
    assert "print('v1')" in first.stdout
    (proj / "scratch").mkdir()
    (proj / "scratch" / "notes.txt").write_text("not synced, not compared\n")
    assert "No changes." in sky("plan", task, check=0).stdout
    (proj / "main.py").write_text("print('v2')\n")
    (proj / "util.py").write_text("X = 1\n")
    plan = sky("plan", task, "--detailed-exitcode")
    assert plan.exit_code == 2
    assert "workdir changed (2 files): the job will run again" in plan.stdout
    assert "1 changed, 1 added: main.py, util.py" in plan.stdout
    again = sky("apply", task, "-y", check=0)
    assert "print('v2')" in again.stdout and "Clusters: 0 added, 1 changed" in again.stdout
    assert "No changes." in sky("plan", task, check=0).stdout
    sky("down", "-y", "code", check=0)


def test_a_changed_run_shows_old_and_new_lines(sky, tmp_path):
    (tmp_path / "proj").mkdir()
    task = task_file(tmp_path, "code.yaml", TASK)
    sky("apply", task, "-y", check=0)
    task.write_text(TASK.replace("echo done", "echo finished"))
    plan = sky("plan", task, "-o", "p.json", check=0)
    assert "run changed: the job will run again" in plan.stdout
    lines = [line.strip() for line in plan.stdout.splitlines()]
    assert "~ run = <<-EOT" in lines
    assert "cat main.py" in lines and "- echo done" in lines and "+ echo finished" in lines
    assert "sha256:" not in plan.stdout.split("Considered")[0]
    markdown = sky("show", "p.json", "--markdown", check=0).stdout
    assert "```diff\n cat main.py\n-echo done\n+echo finished\n```" in markdown
    sky("down", "-y", "code", check=0)


def test_apply_runs_the_job_again_from_the_plan_not_its_attribute_lines(sky, tmp_path):
    """A reviewed plan whose attribute lines were reworded (re-signed, so it is not corrupt)
    applies the same: what apply does comes from the change's specs and flags."""
    from skyform.plan.planfile import read_plan, write_plan

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "main.py").write_text("print('v1')\n")
    task = task_file(tmp_path, "code.yaml", TASK)
    sky("apply", task, "-y", check=0)
    (proj / "main.py").write_text("print('v2')\n")
    sky("plan", task, "-o", "p.json", check=0)
    plan, _ = read_plan(tmp_path / "p.json")
    blind = [c.model_copy(update={"attributes": [], "reason": "edited"}) for c in plan.changes]
    write_plan(plan.model_copy(update={"changes": blind}), tmp_path / "p.json")
    again = sky("apply", "p.json", "-y", check=0)
    assert "print('v2')" in again.stdout
    assert "No changes." in sky("plan", task, check=0).stdout
    sky("down", "-y", "code", check=0)
