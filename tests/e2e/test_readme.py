"""The README's two commands are what a new user runs: check they say what we test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## On a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section, flags=re.S)


def test_readme_has_exactly_two_commands_and_ci_runs_the_second():
    commands = readme_commands()
    assert len(commands) == 2
    ci = (REPO / ".ci" / "run").read_text()
    assert commands[1].strip() in ci


@pytest.mark.e2e
def test_readme_main_job_runs_on_local(sky, tmp_path):
    """The first command's skyform steps, on the embedded `local` infra."""
    first = readme_commands()[0]
    steps = [s.strip() for s in first.split("&&") if ".venv/bin/skyform" in s]
    hello = REPO / "examples" / "hello.yaml"
    outputs = []
    for step in steps:
        args = step.split()[1:]
        args = [str(hello) if a == "examples/hello.yaml" else a for a in args]
        outputs.append(sky(*args, check=0).stdout)
    assert "Plan: 1 to add" in outputs[0]
    assert "hello from" in outputs[1] and "Apply complete!" in outputs[1]
    assert "terminated" in outputs[2]
