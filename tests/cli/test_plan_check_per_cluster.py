"""`plan --check` judges a committed plan as `apply` does, per cluster: a teammate's apply of
another cluster does not make it out of date; a change to a cluster it acts on does."""

from __future__ import annotations


def _task(tmp_path, name: str):
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nresources: {{infra: local}}\nrun: echo {name}\n")
    return path


def test_another_clusters_apply_leaves_a_committed_plan_up_to_date(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine, theirs = _task(tmp_path, "mine"), _task(tmp_path, "theirs")
    assert cli("plan", mine, "-o", "mine.json").exit_code == 0
    assert cli("apply", theirs, "-y").exit_code == 0  # a teammate's cluster: state serial moves
    checked = cli("plan", mine, "--check", "mine.json")
    assert checked.exit_code == 0, checked.output
    assert "mine.json is up to date" in checked.stdout
    applied = cli("apply", "mine.json", "-y")  # and apply agrees
    assert applied.exit_code == 0, applied.output
    assert cli("plan", mine, "-o", "again.json").exit_code == 0
    assert cli("down", "-y", "mine").exit_code == 0  # the plan's own cluster changed
    assert cli("plan", mine, "--check", "again.json").exit_code == 2
    assert cli("down", "-y", "theirs").exit_code == 0
