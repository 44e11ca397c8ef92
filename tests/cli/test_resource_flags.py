"""Resource flags (`--gpus`, `--infra` ...) on `plan`: part of the plan — its digest, its file,
its diff — and checked by `plan --check`; refused where they cannot apply. `--minimize` is
one option everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyform.cli.main import app

REPO = Path(__file__).resolve().parents[2]
TASK = """\
name: train
resources:
  accelerators: {T4: 1, L4: 1}
  use_spot: true
run: python train.py
"""


@pytest.fixture
def task(tmp_path) -> Path:
    path = tmp_path / "train.yaml"
    path.write_text(TASK)
    return path


def _plan(path: Path) -> dict:
    return json.loads(path.read_text())


def test_flags_are_part_of_the_plan(cli, task):
    plain, flagged = task.parent / "plain.json", task.parent / "flagged.json"
    assert cli("plan", task, "-o", plain).exit_code == 0
    shown = cli("plan", task, "-o", flagged, "--gpus", "A100:1", "--infra", "gcp")
    assert shown.exit_code == 0, shown.output
    assert "Planned with resource flags: --gpus A100:1 --infra gcp" in shown.stdout
    before, after = _plan(plain), _plan(flagged)
    assert "overrides" not in before["task"]  # plans made without flags keep their bytes
    assert after["task"]["overrides"] == {"gpus": "A100:1", "infra": "gcp"}
    assert after["task"]["digest"] != before["task"]["digest"]
    offer = after["tasks"][0]["offer"]
    assert (offer["cloud"], offer["accelerator"], offer["accelerator_count"]) == ("gcp", "A100", 1)
    markdown = cli("show", flagged, "--markdown").stdout
    assert "Planned with resource flags: `--gpus A100:1 --infra gcp`" in markdown


def test_check_fails_when_run_with_other_flags(cli, task):
    committed = task.parent / "plan.json"
    assert cli("plan", task, "-o", committed, "--gpus", "A100:1").exit_code == 0
    same = cli("plan", task, "--check", committed, "--gpus", "A100:1")
    assert same.exit_code == 0, same.output
    other = cli("plan", task, "--check", committed)
    assert other.exit_code == 2
    assert "the resource flags differ (--gpus A100:1 → none)" in other.stdout
    moved = cli("plan", task, "--check", committed, "--gpus", "H100:1")
    assert moved.exit_code == 2
    assert "the resource flags differ (--gpus A100:1 → --gpus H100:1)" in moved.stdout
    assert "--gpus H100:1 -o" in moved.stdout  # the command that makes the plan again


def test_saved_plans_refuse_flags(cli, task):
    committed = task.parent / "plan.json"
    assert cli("plan", task, "-o", committed).exit_code == 0
    for verb in (["apply"], ["jobs", "launch"]):
        refused = cli(*verb, committed, "--gpus", "A100:1")
        assert refused.exit_code == 1
        assert "belong to the plan (as do resource flags)" in refused.stderr


def test_no_offer_for_the_flags_says_so(cli, task):
    result = cli("plan", task, "--gpus", "A100:3", "--infra", "aws")
    assert result.exit_code == 4
    assert "The task was planned with --gpus A100:3 --infra aws: change or drop them." in (
        result.stderr
    )


def _objective_commands() -> dict[str, object]:
    """Every command (`plan`, `jobs launch` ...) that has a --minimize option."""
    import typer.main

    found = {}

    def walk(group, prefix):
        for name, command in group.commands.items():
            words = f"{prefix} {name}".strip()
            if hasattr(command, "commands"):
                walk(command, words)
            for param in command.params:
                if "--minimize" in getattr(param, "opts", ()):
                    found[words] = param
        return found

    return walk(typer.main.get_group(app), "")


def test_every_objective_option_is_the_same_enum():
    commands = _objective_commands()
    assert set(commands) == {"plan", "apply", "launch", "jobs launch"}
    assert {tuple(p.type.choices) for p in commands.values()} == {("cost", "time")}


@pytest.mark.parametrize("verb", ["plan", "apply", "launch", "jobs launch"])
def test_a_bad_objective_is_the_same_clear_error(cli, skyform_home, verb):
    yes = [] if verb == "plan" else ["-y"]
    result = cli(*verb.split(), REPO / "examples" / "hello.yaml", "--minimize", "fastest", *yes)
    assert result.exit_code == 1
    assert "Invalid value for '--minimize': 'fastest' is not one of 'cost', 'time'." in (
        result.stderr
    )
    assert "internal error" not in result.output
    assert not (skyform_home / "jobs").exists()  # nothing was launched
