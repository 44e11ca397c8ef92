"""`skyform validate`: human summary, --json, --env/--env-file/--secret, exit codes, weight."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from skyform.spec import load_task, task_digest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def test_help_lists_validate_and_its_options(cli):
    assert "validate" in cli("--help").stdout
    result = cli("validate", "--help")
    assert result.exit_code == 0
    for option in ("--env", "--env-file", "--secret", "--json"):
        assert option in result.stdout


def test_human_summary_of_hello(cli):
    path = EXAMPLES / "hello.yaml"
    result = cli("validate", path)
    assert result.exit_code == 0
    assert result.stderr == ""
    digest = task_digest(load_task(path))
    assert result.stdout == (
        f"{path}: valid, 1 task\n"
        "\n"
        f"hello  ({path}:7)\n"
        "  num_nodes: 1\n"
        "  resources: local\n"
        "  envs:\n"
        "    GREETING: hello\n"
        '  run: echo "$GREETING from $(hostname), node ${SKYFORM_NODE_RANK:-0}"\n'
        "\n"
        "pipeline: hello (single task)\n"
        f"task digest: {digest}\n"
    )


def test_summary_shows_groups_pipeline_shape_and_warnings(cli, tmp_path: Path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: p\n---\nname: a\nresources:\n  ordered:\n    - {infra: aws, accelerators: A10G}\n"
        "    - {infra: gcp, accelerators: L4, use_spot: true}\nrun: echo\n---\n"
        "name: b\nresources:\n  accelerators: {A100: 1, V100: 2}\n  any_of:\n    - infra: oci\n"
        "    - {infra: aws/us-east-1, cpus: 8+}\nservice: {replicas: 1, ports: 80}\nrun: echo\n"
    )
    out = cli("validate", path).stdout
    assert "pipeline 'p' (serial) of 2 tasks" in out
    assert (
        "  resources (in order of preference):\n    1. aws · A10G:1\n    2. gcp · L4:1 · spot\n"
        in out
    )
    assert "  resources (best of):\n    - oci · A100:1\n    - oci · V100:2\n" in out
    assert "    - aws/us-east-1 · A100:1 · cpus 8+\n" in out
    assert "pipeline: a -> b\n" in out
    assert "warnings:\n" in out
    assert "alternatives on oci are skipped" in out
    assert "  service: Fixed 1 replica · port 80 · probe GET / · least_load\n" in out
    assert f"service: is served by `skyform serve up {path}`" in out


def test_json_output(cli):
    path = EXAMPLES / "pipeline.yaml"
    result = cli("validate", path, "--json")
    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    assert payload["valid"] is True
    assert payload["task_digest"] == task_digest(load_task(path))
    dag = payload["dag"]
    assert [t["name"] for t in dag["tasks"]] == ["preprocess", "train", "eval"]
    assert dag["edges"] == [[0, 1], [1, 2]]
    train = dag["tasks"][1]
    assert [[r["accelerator"] for r in g] for g in train["resources"]["groups"]] == [["A100", "L4"]]
    assert train["skyform"]["estimated_hours"] == {"A100": 2.0, "L4": 6.0}
    assert dag["tasks"][0]["skyform"]["inputs_location"] == "aws"
    assert payload["warnings"] == []


def test_env_flags_reach_the_task(cli, tmp_path: Path, monkeypatch):
    task = tmp_path / "t.yaml"
    task.write_text("envs:\n  A: yaml\n  B: null\n  C: null\nrun: echo\n")
    env_file = tmp_path / "vars.env"
    env_file.write_text("A=file\nB=file\n")
    monkeypatch.setenv("C", "shell")
    result = cli(
        "validate", task, "--env-file", env_file, "--env", "A=flag", "--env", "C", "--json"
    )
    assert result.exit_code == 0, result.stderr
    envs = json.loads(result.stdout)["dag"]["tasks"][0]["envs"]
    assert envs == {"A": "flag", "B": "file", "C": "shell"}


def test_missing_value_exit_code_and_hint(cli):
    result = cli("validate", EXAMPLES / "gpu.yaml")
    assert result.exit_code == 1
    assert "secrets.HF_TOKEN: secret 'HF_TOKEN' has no value" in result.stderr
    assert "Hint: Pass it with --secret HF_TOKEN=VALUE" in result.stderr
    assert cli("validate", EXAMPLES / "gpu.yaml", "--secret", "HF_TOKEN=x").exit_code == 0


def test_every_example_validates(cli):
    for path in sorted(EXAMPLES.glob("*.yaml")):
        result = cli("validate", path, "--secret", "HF_TOKEN=x")
        assert result.exit_code == 0, (path, result.stderr)
        assert "warnings:" not in result.stdout, (path, result.stdout)


def test_validate_stays_light():
    """No cloud SDK, solver or SSH library is imported to validate a task."""
    code = (
        "import sys, json; from skyform.cli.main import run; "
        f"code = run(['validate', {str(EXAMPLES / 'hello.yaml')!r}]); "
        "heavy = ('pulumi', 'pulp', 'fabric', 'paramiko', 'boto3'); "
        "heavy = [m for m in heavy if m in sys.modules]; "
        "sys.stderr.write(json.dumps([code, heavy]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ}, check=True
    )
    assert json.loads(proc.stderr) == [0, []]
