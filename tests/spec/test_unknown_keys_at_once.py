"""`validate` (and every verb that reads a task file) reports every unknown key of the file in
one run, at the first, each with the key it most likely meant — not one key per run."""

from __future__ import annotations

import pytest

from skyform.errors import SpecError
from skyform.spec import load_task_text

TYPOS = """\
name: x
rn: echo hi
setp: echo set
resources:
  cpu: 2
  acclerators: A100
run: echo hi
"""


def test_every_unknown_key_of_the_file_is_named_at_once():
    with pytest.raises(SpecError) as caught:
        load_task_text(TYPOS, path_label="t.yaml")
    err = caught.value
    assert (err.path, err.line, err.column, err.field) == ("t.yaml", 2, 1, "rn")
    assert err.message == (
        "4 unknown keys: 'rn' (line 2): did you mean 'run'?; 'setp' (line 3): did you mean "
        "'setup'?; 'resources.cpu' (line 5): did you mean 'cpus'?; 'resources.acclerators' "
        "(line 6): did you mean 'accelerators'?"
    )


def test_one_unknown_key_reads_as_before():
    with pytest.raises(SpecError) as caught:
        load_task_text("name: x\nrn: echo\nrun: echo\n", path_label="t.yaml")
    assert caught.value.message == "unknown key 'rn'"
    assert caught.value.hint.startswith("Did you mean 'run'? Allowed keys in the task: ")


def test_unknown_keys_come_before_the_errors_they_may_cause():
    text = "name: x\nresources:\n  cpu: 2\n  memory: lots\nrun: echo\n"
    with pytest.raises(SpecError) as caught:
        load_task_text(text, path_label="t.yaml")
    assert caught.value.message == "unknown key 'cpu'"


def test_validate_prints_them_in_one_located_error(cli, tmp_path):
    (tmp_path / "t.yaml").write_text(TYPOS)
    result = cli("validate", tmp_path / "t.yaml")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {tmp_path / 't.yaml'}:2:1: rn: 4 unknown keys: ")
    assert "'resources.acclerators' (line 6)" in result.stderr
