"""The Terraform-shaped paths on the embedded `local` infra: a destroy plan, and applying a task
file directly (plan, show, confirm)."""

from __future__ import annotations

import json

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e

HELLO = "name: hello\nresources: {infra: local}\nrun: echo hello from $SKYFORM_NODE_RANK\n"


def test_destroy_plan_then_apply(sky, tmp_path):
    task = task_file(tmp_path, "hello.yaml", HELLO)
    sky("plan", task, "-o", "up.json", check=0)
    sky("apply", "up.json", check=0)
    destroy = sky("plan", task, "--destroy", "-o", "down.json", "--detailed-exitcode")
    assert destroy.exit_code == 2
    assert "- destroy" in destroy.stdout and "Plan: 0 to add, 0 to change, 1 to destroy." in (
        destroy.stdout
    )
    assert json.loads((tmp_path / "down.json").read_text())["destroy"] is True
    applied = sky("apply", "down.json", check=0)
    assert "Clusters: 0 added, 0 changed, 1 destroyed." in applied.stdout
    assert json.loads(sky("status", "--json").stdout) == []
    assert sky("apply", "down.json").exit_code == 3  # already applied: the state moved on
    nothing = sky("plan", task, "--destroy", "--detailed-exitcode")
    assert nothing.exit_code == 0 and "No changes." in nothing.stdout


def test_apply_task_file_needs_confirmation_then_applies_and_is_idempotent(sky, tmp_path):
    task = task_file(tmp_path, "hello.yaml", HELLO)
    refused = sky("apply", task)  # stdin is not a terminal here
    assert refused.exit_code == 1
    assert "Plan: 1 to add" in refused.stdout  # the plan was shown first
    assert "needs confirmation" in refused.stderr and "-y" in refused.stderr
    assert json.loads(sky("status", "--json").stdout) == []  # and nothing was changed
    applied = sky("apply", task, "-y", check=0)
    assert "hello from 0" in applied.stdout and "Apply complete!" in applied.stdout
    again = sky("apply", task, "-y", check=0)
    assert "No changes." in again.stdout and "hello from" not in again.stdout
    sky("down", "-y", "hello", check=0)


def test_a_new_incarnation_of_a_cluster_numbers_its_jobs_from_1(sky, tmp_path):
    """As `sky queue` does: the job table goes with the cluster."""
    task = task_file(tmp_path, "hello.yaml", HELLO)
    sky("apply", task, "-y", check=0)
    sky("exec", "hello", "echo again", check=0)
    assert [j["job_id"] for j in json.loads(sky("queue", "hello", "--json").stdout)] == [1, 2]
    sky("down", "-y", "hello", check=0)
    sky("apply", task, "-y", check=0)
    (job,) = json.loads(sky("queue", "hello", "--json").stdout)
    assert job["job_id"] == 1 and job["name"] == "hello"
    assert "hello from 0" in sky("logs", "hello", "1", check=0).stdout
    sky("down", "-y", "hello", check=0)
