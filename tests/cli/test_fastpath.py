"""The console script answers `status` (no state yet) and `show PLAN` before Typer loads
(skyform/cli/fastpath.py): what a user sees — stdout, stderr, exit code — must be what the
Typer app prints for the same words, for the answers and for every refusal alike."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HELLO = str(REPO / "examples" / "hello.yaml")
SCRIPT = "from skyform.cli.entry import main\nmain()\n"
APP = "import sys\nfrom skyform.cli.main import run\nsys.exit(run(sys.argv[1:]))\n"


def run(code: str, args: list[str], home: Path) -> tuple[int, str, str]:
    env = dict(os.environ, SKYFORM_HOME=str(home), COLUMNS="100", NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=False
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def plan_file(tmp_path: Path, skyform_home: Path) -> Path:
    out = tmp_path / "plan.json"
    assert run(APP, ["plan", HELLO, "-o", str(out)], skyform_home)[0] == 0
    return out


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["status"], 0),
        (["status", "--json"], 0),
        (["status", "-v", "--refresh", "mine"], 0),
        (["status", "--bogus"], 1),
        (["show", "{plan}"], 0),
        (["show", "{plan}", "--json"], 0),
        (["show", "{plan}", "--markdown"], 0),
        (["show", "{plan}", "--json", "--markdown"], 1),
        (["show", "{plan}", "--nope"], 1),
        (["show", "{dir}/missing.json"], 1),
        (["show", "{edited}"], 1),
        (["show", HELLO], 1),
        (["show"], 1),
    ],
)
def test_the_console_script_answers_as_the_app_does(args, code, plan_file, skyform_home):
    edited = plan_file.with_name("edited.json")
    edited.write_text(plan_file.read_text().replace('"hello"', '"hullo"', 1))
    argv = [a.format(plan=plan_file, dir=plan_file.parent, edited=edited) for a in args]
    script = run(SCRIPT, argv, skyform_home)
    assert script == run(APP, argv, skyform_home)
    assert script[0] == code and (script[1] if code == 0 else script[2])
