"""The plan never surprises (issue 10 §5, issue 11 §7), on the embedded `local` infra: a plan
touches the clusters it names, ownership does not depend on how the task path was typed, and
another file's cluster is never taken over silently."""

from __future__ import annotations

import json

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e

HELLO = "name: hello\nresources: {infra: local}\nrun: echo hello from $SKYFORM_NODE_RANK\n"


def clusters(sky) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(sky("status", "--json").stdout)}


def test_apply_under_another_name_never_destroys_the_first_cluster(sky, tmp_path):
    task = task_file(tmp_path, "hello.yaml", HELLO)
    sky("apply", task, "-y", check=0)
    other = sky("apply", task, "-c", "hello-two", "-y", check=0)
    assert "Plan: 1 to add, 0 to change, 0 to destroy." in other.stdout
    assert "Clusters this plan leaves as they are:" in other.stdout
    assert "hello: made from this task file but not named by this plan" in other.stdout
    assert "skyform down hello" in other.stdout
    assert set(clusters(sky)) == {"hello", "hello-two"}


def test_a_task_removed_from_a_pipeline_is_mentioned_not_destroyed(sky, tmp_path):
    docs = ["name: p\n"] + [
        f"name: {t}\nresources: {{infra: local}}\nrun: echo {t}\n" for t in ("a", "b", "c")
    ]
    task = task_file(tmp_path, "p.yaml", "---\n".join(docs))
    sky("apply", task, "-y", check=0)
    task.write_text("---\n".join(docs[:3]))  # task c removed
    plan = sky("plan", task, check=0)
    assert "No changes." in plan.stdout
    assert "p-c: made from this task file but not named by this plan" in plan.stdout
    assert set(clusters(sky)) == {"p-a", "p-b", "p-c"}
    destroy = sky("plan", task, "--destroy", check=0)  # destroying is said out loud
    assert "Plan: 0 to add, 0 to change, 3 to destroy." in destroy.stdout


def test_ownership_does_not_depend_on_how_the_path_is_spelled(sky, tmp_path):
    folder = tmp_path / "a"
    folder.mkdir()
    task_file(folder, "task.yaml", HELLO)
    sky("apply", "a/task.yaml", "-c", "first", "-y", check=0)
    # the same file, typed from inside its folder: the cluster is this file's
    plan = sky("plan", "task.yaml", "-c", "first", cwd=folder, check=0)
    assert "No changes." in plan.stdout and "takes over" not in plan.stdout
    destroy = sky("plan", "task.yaml", "--destroy", cwd=folder, check=0)
    assert 'cluster "first" will be destroyed' in destroy.stdout
    assert clusters(sky)["first"]["source"] == str(folder.resolve() / "task.yaml")


def test_another_file_with_the_same_name_does_not_take_the_cluster_over(sky, tmp_path):
    for folder in ("mine", "theirs"):
        (tmp_path / folder).mkdir()
    mine = task_file(tmp_path / "mine", "train.yaml", "name: train_v2\n" + HELLO[12:])
    theirs = task_file(
        tmp_path / "theirs", "train.yaml", "name: train-v2\n" + HELLO[12:] + "envs: {X: 1}\n"
    )
    sky("apply", mine, "-y", check=0)
    plan = sky("plan", theirs, "-o", "theirs.json", check=0)
    assert "(!) takes over a cluster that belongs to the task file " in plan.stdout
    assert str(mine.resolve()) in plan.stdout
    shown = sky("show", "theirs.json", "--markdown", check=0)
    assert "⚠️ `train-v2`: (!) takes over" in shown.stdout
    refused = sky("apply", "theirs.json")
    assert refused.exit_code == 1
    assert "takes over cluster(s) that another task file or a managed job made" in refused.stderr
    assert "--take-over" in refused.stderr
    refused = sky("apply", theirs, "-y")  # -y approves the plan, not the takeover
    assert refused.exit_code == 1 and "--take-over" in refused.stderr
    assert clusters(sky)["train-v2"]["source"] == str(mine.resolve())  # nothing changed
    sky("apply", "theirs.json", "--take-over", check=0)
    assert clusters(sky)["train-v2"]["source"] == str(theirs.resolve())


def test_a_name_that_is_not_a_cluster_name_says_what_it_became(sky, tmp_path):
    task = task_file(tmp_path, "t.yaml", "name: Train_V2\n" + HELLO[12:])
    plan = sky("plan", task, check=0)
    assert 'name "train-v2" made from the task name "Train_V2"' in plan.stdout
    typed = sky("plan", task, "-c", "Train_V2", check=0)  # a name SkyPilot takes: shown so
    assert 'shown as "Train_V2", as typed' in typed.stdout
    refused = sky("plan", task, "-c", "Train V2")  # one it refuses is refused
    assert refused.exit_code == 1 and "Pass --cluster/-c train-v2" in refused.stderr
    # task names are validated; file names are not: a stem of nothing usable gets a digest
    japanese = sky("plan", task_file(tmp_path, "名前.yaml", HELLO[12:]), check=0)
    dots = sky("plan", task_file(tmp_path, "...yaml", HELLO[12:]), check=0)
    first = japanese.stdout.split('cluster "', 1)[1].split('"', 1)[0]
    second = dots.stdout.split('cluster "', 1)[1].split('"', 1)[0]
    assert first.startswith("sky-") and second.startswith("sky-") and first != second
