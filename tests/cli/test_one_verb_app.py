"""A run builds only the click command of the verb it names (skyform.cli.main.app_for):
help, usage errors and suggestions must read exactly as the whole app's."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from skyform.cli.main import app, app_for


def _verbs() -> list[str]:
    return [c.name for c in app.registered_commands if c.name] + [
        g.name for g in app.registered_groups if isinstance(g.name, str)
    ]


def _same_output(args: list[str]) -> None:
    whole = CliRunner().invoke(app, args, prog_name="skyform")
    trimmed = CliRunner().invoke(app_for(args), args, prog_name="skyform")
    assert (trimmed.exit_code, trimmed.output) == (whole.exit_code, whole.output)


@pytest.mark.parametrize("verb", _verbs())
def test_a_verbs_help_and_usage_errors_read_as_the_whole_apps(verb):
    _same_output([verb, "--help"])
    _same_output([verb, "--no-such-flag"])


@pytest.mark.parametrize(
    "args", [["jobs", "launch", "--help"], ["catalog", "show", "--help"], ["cost", "nope"]]
)
def test_sub_verbs_read_as_the_whole_apps(args):
    _same_output(args)


def test_only_the_named_verb_is_built():
    assert [c.name for c in app_for(["plan", "x.yaml"]).registered_commands] == ["plan"]
    assert app_for(["jobs", "queue"]).registered_commands == []
    assert [g.name for g in app_for(["jobs", "queue"]).registered_groups] == ["jobs"]


@pytest.mark.parametrize("args", [[], ["--help"], ["plna"], ["--version"]])
def test_anything_but_a_verb_gets_the_whole_app(args):
    assert app_for(args) is app
