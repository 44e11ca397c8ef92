"""The verbs a SkyPilot user types: the ones skyform lacks say so in one line; aliases are the
same command; prompts of `jobs launch` / `jobs cancel` ask on a terminal only."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from skyform.cli.commands.not_yet import SKYPILOT_ONLY

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "argv",
    [
        ["api", "info"],
        ["volumes", "ls"],
        ["volumes", "--help"],
    ],
)
def test_a_skypilot_verb_skyform_lacks_is_one_line_and_exit_1(cli, argv):
    result = cli(*argv)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [f"Error: skyform has no `{argv[0]}` yet (in SkyPilot: "
                     f"{SKYPILOT_ONLY[argv[0]]}); see skyform --help"]  # fmt: skip
    assert result.stdout == ""


def test_launch_is_a_verb_not_a_suggestion(cli):
    result = cli("launch", "--help")
    assert result.exit_code == 0
    assert "Usage: skyform launch" in result.stdout
    assert "Did you mean" not in result.output


def test_a_verb_that_lands_replaces_its_not_yet_line(cli):
    """`launch` took its own module; the table only answers for verbs nobody registered."""
    from skyform.cli.main import app

    names = [c.name for c in app.registered_commands]
    assert len(names) == len(set(names))  # no verb registered twice


@pytest.mark.parametrize(
    ("alias", "original"),
    [
        (["show-gpus"], ["gpus"]),
        (["gpus", "list"], ["gpus"]),
        (["gpus", "list", "A100:8"], ["gpus", "A100:8"]),
        (["show-gpus", "A100:8", "--all-regions"], ["gpus", "A100:8", "--all"]),
    ],
)
def test_gpu_listing_aliases_print_the_same(cli, alias, original):
    got, want = cli(*alias), cli(*original)
    assert (got.exit_code, got.stdout) == (0, want.stdout)


def test_all_regions_lists_every_region(cli):
    cheapest = cli("gpus", "A100:8").stdout.splitlines()
    every = cli("gpus", "A100:8", "--all-regions").stdout.splitlines()
    assert len(every) > len(cheapest)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_jobs_launch_asks_on_a_terminal_and_no_launches_nothing(cli, skyform_home, monkeypatch):
    monkeypatch.setattr("sys.stdin", _Terminal("no\n"))
    result = cli("jobs", "launch", REPO / "examples" / "hello.yaml")
    assert result.exit_code == 1
    assert "Launch a managed job from" in result.stdout
    assert "Cancelled: nothing was changed." in result.stdout
    assert not (skyform_home / "jobs").exists()


def test_jobs_cancel_asks_on_a_terminal(cli, monkeypatch):
    monkeypatch.setattr("sys.stdin", _Terminal("no\n"))
    result = cli("jobs", "cancel", "--all")
    assert result.exit_code == 1
    assert "Cancel every unfinished managed job?" in result.stdout


def test_launch_of_a_command_says_what_to_do(cli):
    result = cli("launch", "echo hi", "-y")
    assert result.exit_code == 1
    assert "launch takes a task YAML, and 'echo hi' is not a file" in result.stderr
    assert "skyform exec CLUSTER 'echo hi'" in result.stderr


@pytest.mark.parametrize("verb", [["jobs", "launch"], ["launch"], ["exec", "c"]])
def test_detach_run_is_accepted_where_skypilot_accepts_it(cli, tmp_path, verb):
    """`sky launch/exec/jobs launch --detach-run`: the option is known (what follows fails
    on the missing task file, not on the option)."""
    result = cli(*verb, "--detach-run", tmp_path / "missing.yaml")
    assert result.exit_code == 1
    assert "No such option" not in result.output
    assert "missing.yaml" in result.output or "no cluster named 'c'" in result.output
