"""`skyform plan TASK --check PLAN` as a CI job runs it, and the cost policy options.

Exit codes: 0 the committed plan is exactly what planning writes now; 2 it is not (and the
output says whether the task, the catalog or the state moved); 1 a cost limit is exceeded.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import sys
import threading
from pathlib import Path

import pytest
from helpers import heavy_modules, modules_loaded_by

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
sys.path.insert(0, str(REPO / "tests" / "cost"))
from costkit import dearer_g6_without_m7a, v8_catalog  # noqa: E402


@pytest.fixture
def pipeline(tmp_path) -> Path:
    """examples/pipeline.yaml copied next to where its plan is committed."""
    return Path(shutil.copy(EXAMPLES / "pipeline.yaml", tmp_path / "pipeline.yaml"))


@pytest.fixture
def catalog_server(tmp_path):
    """A local HTTP server with a SkyPilot v8 catalog: the bundled tables, except that the
    g6.xlarge the pipeline trains on is dearer and the m7a.xlarge it evaluates on is gone."""
    root = v8_catalog(tmp_path / "served" / "v8", dearer_g6_without_m7a)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root.parent))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v8"
    httpd.shutdown()
    httpd.server_close()


def committed(cli, task: Path, *extra) -> Path:
    out = task.parent / "plan.json"
    assert cli("plan", task, "-o", out, *extra).exit_code == 0
    return out


def test_unchanged_plan_passes(cli, pipeline):
    plan = committed(cli, pipeline)
    before = plan.read_bytes()
    result = cli("plan", pipeline, "--check", plan)
    assert result.exit_code == 0, result.output
    assert "plan.json is up to date" in result.stdout
    assert plan.read_bytes() == before  # --check writes nothing


def test_task_edit_is_exit_2_and_says_the_task_changed(cli, pipeline):
    plan = committed(cli, pipeline)
    pipeline.write_text(pipeline.read_text().replace("estimated_hours: 0.5", "estimated_hours: 2"))
    result = cli("plan", pipeline, "--check", plan)
    assert result.exit_code == 2, result.output
    out = result.stdout
    assert "plan.json is out of date" in out
    assert "the task file pipeline.yaml changed (sha256:" in out
    assert "catalog" not in out and "state" not in out
    # and what that does: preprocess runs 2 h instead of 0.5 h at $0.26805/h
    assert "~ train-pipeline-preprocess (changed)" in out
    assert "estimated hours 0.5 → 2" in out
    assert "estimated  $0.13 → $0.54  (+$0.40)" in out
    assert "Update it, review and commit: skyform plan" in out


def test_catalog_refresh_is_exit_2_and_says_the_catalog_changed(cli, pipeline, catalog_server):
    plan = committed(cli, pipeline)
    refreshed = cli("catalog", "refresh", "--url", catalog_server)
    assert refreshed.exit_code == 0, refreshed.output
    result = cli("plan", pipeline, "--check", plan)
    assert result.exit_code == 2, result.output
    out = result.stdout
    assert "the price catalog changed" in out
    assert "task file" not in out and "state moved" not in out
    # the eval cluster's m7a.xlarge is gone, so it moves; its old offer is named
    assert "~ train-pipeline-eval (changed)" in out
    assert "from aws/us-east-2/use2-az2 m7a.xlarge (create)" in out


def test_state_change_is_exit_2_and_says_state_moved(cli, tmp_path):
    task = Path(shutil.copy(EXAMPLES / "hello.yaml", tmp_path / "hello.yaml"))
    plan = committed(cli, task)
    try:
        applied = cli("apply", plan)
        assert applied.exit_code == 0, applied.output
        result = cli("plan", task, "--check", plan)
        assert result.exit_code == 2, result.output
        out = result.stdout
        assert "the state moved on (serial 0 → " in out
        assert "task file" not in out and "catalog" not in out
        assert "~ hello (changed)" in out and "action create → noop" in out
        assert "Placements, actions and costs are the same." not in out  # the action moved
    finally:
        cli("down", "-y", "hello")


def test_objective_of_the_committed_plan_is_named(cli, pipeline):
    plan = committed(cli, pipeline, "--minimize", "time")
    result = cli("plan", pipeline, "--check", plan)
    assert result.exit_code == 2
    assert "the objective differs (--minimize time → cost)" in result.stdout
    assert cli("plan", pipeline, "--check", plan, "--minimize", "time").exit_code == 0


def test_check_json(cli, pipeline):
    plan = committed(cli, pipeline)
    data = json.loads(cli("plan", pipeline, "--check", plan, "--json").stdout)
    assert data["up_to_date"] is True and data["comparison"]["reasons"] == []


def test_check_of_a_missing_plan_is_an_error(cli, pipeline):
    result = cli("plan", pipeline, "--check", pipeline.parent / "nope.json")
    assert result.exit_code == 1 and "no plan file at" in result.stderr


def test_check_and_out_are_exclusive(cli, pipeline):
    plan = committed(cli, pipeline)
    result = cli("plan", pipeline, "--check", plan, "-o", plan)
    assert result.exit_code == 1 and "--check compares and writes nothing" in result.stderr


# --- cost policy -----------------------------------------------------------------------------


def test_hourly_limit_fails_plan_and_writes_nothing(cli, pipeline):
    out = pipeline.parent / "plan.json"
    result = cli("plan", pipeline, "-o", out, "--max-hourly-cost", "0.5")
    assert result.exit_code == 1
    assert (
        "hourly cost $0.7598/h exceeds --max-hourly-cost $0.50/h "
        "(train-pipeline-preprocess $0.2681/h, train-pipeline-train $0.2599/h, "
        "train-pipeline-eval $0.2318/h)" in result.stderr
    )
    assert not out.exists()
    assert "Plan: 3 to add" in result.stdout  # the plan is still shown
    assert cli("plan", pipeline, "-o", out, "--max-hourly-cost", "0.8").exit_code == 0
    assert out.exists()


def test_total_limit_fails_the_check_even_when_up_to_date(cli, pipeline):
    plan = committed(cli, pipeline)
    result = cli("plan", pipeline, "--check", plan, "--max-total-cost", "9")
    assert result.exit_code == 1
    assert "plan.json is up to date" in result.stdout
    assert "estimated total $9.91 exceeds --max-total-cost $9.00" in result.stderr
    assert "egress $7.98" in result.stderr
    ok = cli("plan", pipeline, "--check", plan, "--max-total-cost", "10", "--max-hourly-cost", "1")
    assert ok.exit_code == 0


def test_check_imports_nothing_plan_does_not(tmp_path):
    out = tmp_path / "p.json"
    task = str(EXAMPLES / "pipeline.yaml")
    plain = modules_loaded_by(["plan", task, "-o", str(out)])
    checked = modules_loaded_by(["plan", task, "--check", str(out), "--max-hourly-cost", "9"])
    extra = {m for m in checked - plain if not m.startswith("skyform.")}
    assert extra == set()
    assert not heavy_modules(checked)


def test_cloud_plan_is_portable_but_a_local_plan_follows_the_hardware(
    cli, pipeline, skyform_home, monkeypatch, tmp_path
):
    """A plan records the digest of the on-prem sources its tasks can use only: a cloud
    pipeline checked on a CI runner with other hardware is up to date; a task on `infra:
    local` is placed on this machine's cores, so other hardware makes its plan stale (unless
    config.yaml pins `local:`)."""
    machine = {"cpus": 2}
    monkeypatch.setattr("os.cpu_count", lambda: machine["cpus"])
    cloud_plan = committed(cli, pipeline)
    local_task = tmp_path / "local.yaml"
    local_task.write_text("name: here\nresources: {infra: local}\nrun: echo hi\n")
    local_plan = tmp_path / "local.plan.json"
    assert cli("plan", local_task, "-o", local_plan).exit_code == 0
    machine["cpus"] = 96  # the CI runner
    assert cli("plan", pipeline, "--check", cloud_plan).exit_code == 0
    result = cli("plan", local_task, "--check", local_plan)
    assert result.exit_code == 2
    assert "the local/ssh pool settings in config.yaml changed" in result.stdout
    (skyform_home / "config.yaml").write_text("local: {cpus: 4, memory: 16}\n")
    assert cli("plan", local_task, "-o", local_plan).exit_code == 0
    machine["cpus"] = 2  # back on the laptop
    assert cli("plan", local_task, "--check", local_plan).exit_code == 0


def readme_ci_commands() -> list[list[str]]:
    """The skyform command lines of the README's GitHub Actions example, in order."""
    import re
    import shlex

    import yaml

    text = (REPO / "README.md").read_text()
    pattern = r"```yaml\n(# \.github/workflows/skyform-plan\.yml.+?)\n```"
    (block,) = re.findall(pattern, text, flags=re.S)
    steps = yaml.safe_load(block)["jobs"]["plan"]["steps"]
    lines = [line for s in steps for line in str(s.get("run", "")).splitlines()]
    return [shlex.split(line.split(">")[0])[1:] for line in lines if line.startswith("skyform ")]


def test_readme_ci_workflow_passes_on_a_plan_made_as_it_says(cli, tmp_path, monkeypatch):
    commands = readme_ci_commands()
    assert [c[:1] for c in commands] == [["plan"], ["cost"]]
    shutil.copy(EXAMPLES / "pipeline.yaml", tmp_path / "task.yaml")
    (tmp_path / "ci-home").mkdir()
    (tmp_path / "ci-home" / "config.yaml").write_text("local: {cpus: 4, memory: 16}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SKYFORM_HOME", "ci-home")
    assert cli("plan", "task.yaml", "-o", "plan.json").exit_code == 0
    check, comment = (cli(*args) for args in commands)
    assert check.exit_code == 0, check.output
    assert comment.exit_code == 0 and "#### Cost estimate" in comment.stdout
