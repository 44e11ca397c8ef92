"""`skyform --help`, `plan`, `show`, `status` (and `export`) never import a Pulumi SDK.

Each command runs in a fresh interpreter that then reports every module it loaded. Commands
that do not exist yet are skipped: add a row to COMMANDS when a verb lands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pulumi_specs import AWS_G5, GCP_N1_V100, K8S_H100, LOCAL, plan_of, spec

from skyform.plan.planfile import write_plan

REPO = Path(__file__).resolve().parents[3]
SDKS = ("pulumi", "pulumi_aws", "pulumi_gcp", "pulumi_kubernetes", "kubernetes")
# (verb, args, exit code); {plan} is a plan with aws, gcp, kubernetes and local clusters,
# {out} a new dir
COMMANDS = [
    ("--help", ["--help"], 0),
    ("plan", ["plan", str(REPO / "examples" / "hello.yaml")], 0),
    ("plan", ["plan", str(REPO / "examples" / "hello.yaml"), "--detailed-exitcode"], 2),
    ("launch", ["launch", str(REPO / "examples" / "hello.yaml"), "--dryrun"], 0),
    ("show", ["show", "{plan}"], 0),
    ("show", ["show", "{plan}", "--json"], 0),
    ("status", ["status"], 0),
    ("export", ["export", "{plan}", "-o", "{out}"], 0),
]


def modules_loaded_by(args: list[str], env: dict[str, str]) -> tuple[int, set[str]]:
    code = (
        "import sys, json\n"
        "from skyform.cli.main import run\n"
        f"code = run({args!r})\n"
        "sys.stderr.write('\\nMODULES=' + json.dumps([code, sorted(sys.modules)]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert "MODULES=" in proc.stderr, proc.stderr
    exit_code, modules = json.loads(proc.stderr.rsplit("MODULES=", 1)[1])
    return exit_code, set(modules)


def _verbs() -> set[str]:
    from skyform.cli.main import app

    return {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}


@pytest.mark.parametrize(
    ("verb", "args", "expected"), COMMANDS, ids=[f"{c[0]}-{i}" for i, c in enumerate(COMMANDS)]
)
def test_command_loads_no_pulumi_sdk(verb, args, expected, tmp_path, skyform_home):
    assert verb == "--help" or verb in _verbs(), f"`skyform {verb}` is not a command"
    plan_file = tmp_path / "plan.json"
    plan = plan_of(
        spec(AWS_G5, name="a"), spec(GCP_N1_V100, name="g"), spec(K8S_H100, name="k"),
        spec(LOCAL, name="l"),
    )  # fmt: skip
    write_plan(plan, plan_file)
    argv = [a.format(plan=plan_file, out=tmp_path / "out") for a in args]
    env = dict(os.environ, SKYFORM_HOME=str(skyform_home), GOOGLE_CLOUD_PROJECT="p")
    exit_code, loaded = modules_loaded_by(argv, env)
    assert exit_code == expected, f"skyform {' '.join(argv)} exited {exit_code}"
    heavy = sorted(m for m in loaded if m.split(".")[0] in SDKS)
    assert not heavy, f"skyform {' '.join(argv)} imported {heavy[:5]}"
