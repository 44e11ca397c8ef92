"""`skyform plan` as a user drives it: saved plans, determinism, exit codes, no half-writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import heavy_modules, modules_loaded_by

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_plan_saves_a_plan_that_show_renders_identically(cli, tmp_path):
    out = tmp_path / "hello.plan.json"
    result = cli("plan", EXAMPLES / "hello.yaml", "-o", out)
    assert result.exit_code == 0, result.output
    assert "Plan: 1 to add, 0 to change, 0 to destroy." in result.stdout
    assert "To perform exactly these actions, run: skyform apply" in result.stdout
    plan = json.loads(out.read_text())
    assert plan["task"]["path"] == os.path.relpath(EXAMPLES / "hello.yaml", tmp_path)
    assert plan["tasks"][0]["offer"]["cloud"] == "local"
    shown = cli("show", out)
    assert "Plan: 1 to add" in shown.stdout
    assert cli("show", out, "--json").stdout == out.read_text()


def test_plan_json_is_the_plan_file(cli, tmp_path):
    out = tmp_path / "p.json"
    result = cli("plan", EXAMPLES / "gpu.yaml", "--secret", "HF_TOKEN=hf_abc", "-o", out, "--json")
    assert result.stdout == out.read_text()
    assert "hf_abc" not in result.stdout  # secrets are hashed, never stored


def test_same_inputs_give_same_bytes_across_processes(tmp_path):
    outputs = []
    for seed in ("0", "7"):
        out = tmp_path / f"plan-{seed}.json"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "skyform.cli.main",
                "plan",
                str(EXAMPLES / "pipeline.yaml"),
                "-o",
                str(out),
            ],
            env=env,
            check=True,
            capture_output=True,
            cwd=tmp_path,
        )
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_detailed_exitcode_is_2_with_changes(cli, tmp_path):
    result = cli("plan", EXAMPLES / "hello.yaml", "--detailed-exitcode")
    assert result.exit_code == 2
    assert cli("plan", EXAMPLES / "hello.yaml").exit_code == 0


def test_bad_task_writes_nothing(cli, tmp_path):
    task = write(tmp_path / "bad.yaml", "resources:\n  acelerators: A100\nrun: echo\n")
    out = tmp_path / "plan.json"
    result = cli("plan", task, "-o", out)
    assert result.exit_code == 1
    assert "bad.yaml:2:3" in result.stderr and "Did you mean 'accelerators'" in result.stderr
    assert not out.exists()


def test_no_offers_is_exit_4_and_writes_nothing(cli, tmp_path):
    task = write(tmp_path / "big.yaml", "resources:\n  accelerators: A100:3\nrun: echo\n")
    out = tmp_path / "plan.json"
    out.write_text("previous plan")
    result = cli("plan", task, "-o", out)
    assert result.exit_code == 4, result.output
    assert "A100:3" in result.stderr
    assert out.read_text() == "previous plan"


def test_unsupported_cloud_is_one_clear_error(cli, tmp_path):
    task = write(tmp_path / "azure.yaml", "resources:\n  infra: azure\nrun: echo\n")
    result = cli("plan", task)
    assert result.exit_code == 1
    assert "azure" in result.stderr and "Traceback" not in result.output


def test_markdown_output(cli):
    result = cli("plan", EXAMPLES / "pipeline.yaml", "--markdown")
    assert result.exit_code == 0
    assert result.stdout.startswith("### skyform plan for `")
    assert "**Plan: 3 to add, 0 to change, 0 to destroy.**" in result.stdout


def test_cluster_name_option_and_minimize_time(cli, tmp_path):
    out = tmp_path / "p.json"
    args = ("plan", EXAMPLES / "gpu.yaml", "--secret", "HF_TOKEN=x", "--minimize", "time")
    refused = cli(*args, "-c", "My Run!", "-o", out)
    assert refused.exit_code == 1
    assert "'My Run!' is not a valid cluster name" in refused.stderr
    assert "Pass --cluster/-c my-run" in refused.stderr and not out.exists()
    assert cli(*args, "-c", "my-run", "-o", out).exit_code == 0
    plan = json.loads(out.read_text())
    assert plan["objective"] == "time"
    assert plan["tasks"][0]["cluster"] == "my-run"


def test_plan_and_show_import_no_heavy_sdk(tmp_path):
    out = tmp_path / "p.json"
    assert not heavy_modules(
        modules_loaded_by(["plan", str(EXAMPLES / "pipeline.yaml"), "-o", str(out)])
    )
    assert not heavy_modules(modules_loaded_by(["show", str(out)]))
