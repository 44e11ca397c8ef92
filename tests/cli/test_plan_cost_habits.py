"""What a plan says about cost, as a SkyPilot user reads it: a cluster without autostop bills
until `down`; the considered resources name every accelerator asked for; no figure is in
scientific notation. And cost-report's CSV gives times a spreadsheet reads."""

from __future__ import annotations

import csv
import io
from datetime import datetime

SET_OF_GPUS = "resources:\n  infra: aws\n  accelerators: {T4: 1, L4: 1}\nrun: echo hi\n"


def _plan(cli, tmp_path, text: str, name: str = "t.yaml") -> str:
    task = tmp_path / name
    task.write_text(text)
    result = cli("plan", task)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_cluster_without_autostop_is_said_to_bill_until_down(cli, tmp_path):
    text = _plan(cli, tmp_path, SET_OF_GPUS)
    assert '+ autostop       = "none: bills until `skyform down`' in text
    armed = SET_OF_GPUS.replace("infra: aws\n", "infra: aws\n  autostop: 30\n")
    text = _plan(cli, tmp_path, armed)
    assert "bills until" not in text and "+ autostop       = " in text
    free = _plan(cli, tmp_path, "resources: {infra: local}\nrun: echo hi\n")  # $0/h: nothing billed
    assert "autostop" not in free


def test_considered_resources_name_the_set_of_accelerators_asked(cli, tmp_path):
    text = _plan(cli, tmp_path, SET_OF_GPUS)
    assert "Considered resources (1 node, asked: {T4:1, L4:1}, aws):" in text
    ordered = "resources:\n  ordered:\n    - {infra: aws, accelerators: L4}\n"
    ordered += "    - {infra: aws, accelerators: T4}\nrun: echo hi\n"
    text = _plan(cli, tmp_path, ordered)
    assert "asked: (L4:1, aws), else (T4:1, aws)):" in text


def test_no_figure_in_a_plan_is_in_scientific_notation(cli, tmp_path):
    pipeline = "name: pipe\n"
    for task in ("a", "b"):
        pipeline += f"---\nname: {task}\nresources: {{infra: local}}\n"
        pipeline += f"skyform: {{estimated_hours: 0.00001}}\nrun: echo {task}\n"
    text = _plan(cli, tmp_path, pipeline)
    (row_b,) = [line for line in text.splitlines() if line.startswith("b ")]
    assert row_b.split()[-2] == "0.00001"  # START (h), not 1e-05
    assert "e-0" not in text and "e+0" not in text


def test_cost_report_csv_times_are_iso_8601(cli, tmp_path):
    task = tmp_path / "t.yaml"
    task.write_text("name: iso\nresources: {infra: local}\nrun: echo hi\n")
    assert cli("launch", task, "-y", "-c", "iso").exit_code == 0
    rows = list(csv.DictReader(io.StringIO(cli("cost-report", "--csv").stdout)))
    started = rows[0]["started_at"]
    assert started.endswith("Z") and "T" in started
    assert datetime.fromisoformat(started.replace("Z", "+00:00")).year >= 2024
    cli("down", "-y", "iso")


def test_plan_check_from_another_directory_says_the_relative_paths_moved(
    cli, tmp_path, monkeypatch
):
    """Relative paths start where skyform runs (as with `sky launch`): a committed plan made
    from the repository's root and checked from another folder that also has the paths
    reads other files, and --check says why (a clone at another path checks clean:
    tests/e2e/test_portable_plans.py)."""
    repo = tmp_path / "repo"
    for folder in (repo / "code", repo / "jobs" / "code"):
        folder.mkdir(parents=True)
    (repo / "jobs" / "task.yaml").write_text("resources: {infra: local}\nworkdir: code\nrun: ls\n")
    monkeypatch.chdir(repo)
    assert cli("plan", "jobs/task.yaml", "-o", "plan.json").exit_code == 0
    monkeypatch.chdir(repo / "jobs")
    checked = cli("plan", "task.yaml", "--check", "../plan.json")
    assert checked.exit_code == 2
    assert (
        f"the task's relative paths start at another directory ({repo} → {repo / 'jobs'})"
        in checked.output
    )
    assert "run it from the directory the plan was made in" in checked.output
