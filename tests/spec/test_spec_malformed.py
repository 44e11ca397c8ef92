"""Every malformed task file gets one precise error: file:line:col, field, message, hint.

The table is tests/spec/malformed/cases.yaml. Each case is checked twice: through the
API (the SpecError's attributes) and through `skyform validate` (exit code 1, the
message on stderr, nothing on stdout, no traceback).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from skyform.errors import SpecError, UnsupportedError
from skyform.spec import check_supported, load_task

HERE = Path(__file__).parent / "malformed"
CASES = yaml.safe_load((HERE / "cases.yaml").read_text())
LIBYAML = getattr(yaml, "__with_libyaml__", False)


def test_corpus_is_complete():
    files = {p.name for p in HERE.glob("*.yaml") if p.name != "cases.yaml"}
    assert files == set(CASES), "every malformed file needs a row in cases.yaml, and back"
    assert len(files) >= 60


def _expected_location(path: Path, case: dict) -> str:
    return f"{path}:{case['at']}" if case["at"] else str(path)


@pytest.mark.parametrize("name", sorted(CASES))
def test_api_error_is_precise(name: str):
    case = CASES[name]
    path = HERE / name
    with pytest.raises(SpecError) as caught:
        check_supported(load_task(path))
    err = caught.value
    assert isinstance(err, UnsupportedError) == bool(case.get("unsupported"))
    assert err.path == str(path)
    if case["at"] and (LIBYAML or not case.get("syntax")):
        assert f"{err.line}:{err.column}" == case["at"]
    elif not case["at"]:
        assert err.line is None
    assert err.field == case.get("field")
    assert case["message"] in err.message
    if "hint" in case:
        assert err.hint and case["hint"] in err.hint


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_reports_it_and_exits_1(cli, name: str):
    case = CASES[name]
    path = HERE / name
    result = cli("validate", path)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "Traceback" not in result.output
    first, *rest = result.stderr.strip().splitlines()
    if LIBYAML or not case.get("syntax"):
        assert first.startswith(f"Error: {_expected_location(path, case)}: ")
    if case.get("field"):
        assert f": {case['field']}: " in first
    assert case["message"] in first
    if "hint" in case:
        assert rest and rest[0].startswith("Hint: ")
        assert case["hint"] in " ".join(rest)


def test_file_over_the_size_limit(tmp_path: Path, cli):
    big = tmp_path / "big.yaml"
    big.write_text("run: |\n" + ("  echo " + "x" * 100 + "\n") * 50_000)
    result = cli("validate", big)
    assert result.exit_code == 1
    assert f"{big}: file is larger than 4 MB" in result.stderr


def test_not_utf8(tmp_path: Path, cli):
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("run: echo caf\xe9\n".encode("latin-1"))
    result = cli("validate", bad)
    assert result.exit_code == 1
    assert "not UTF-8 text" in result.stderr
    assert "Hint: Save the task file as UTF-8." in result.stderr


def test_deep_nesting_is_rejected(tmp_path: Path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("config: " + "[" * 100 + "]" * 100 + "\nrun: echo\n")
    with pytest.raises(SpecError, match="nests deeper than 64 levels"):
        load_task(deep)


def test_missing_file_and_directory(tmp_path: Path, cli):
    missing = cli("validate", tmp_path / "nope.yaml")
    assert missing.exit_code == 1
    assert f"{tmp_path / 'nope.yaml'}: no such file" in missing.stderr
    folder = cli("validate", tmp_path)
    assert folder.exit_code == 1
    assert "is a directory" in folder.stderr


def test_recursive_alias_is_rejected():
    from skyform.spec import load_task_text

    # PyYAML composes a self-referencing anchor into a cyclic graph; it must not hang.
    with pytest.raises(SpecError) as caught:
        load_task_text("config: &a\n  self: *a\nrun: echo\n", path_label="t.yaml")
    assert caught.value.line is not None
