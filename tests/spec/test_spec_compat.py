"""SkyPilot's own example task files: each one validates, or fails with one precise message.

The corpus lives outside the repo (../shared/compat, not redistributed here); the tests
skip when it is absent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import CORPUS, CORPUS_FILES, needs_corpus

from skyform.errors import SpecError, UnsupportedError
from skyform.spec import check_supported, load_task
from skyform.spec.inputs import TaskInputs

FILES = CORPUS_FILES
LOCATION = re.compile(r"^Error: \S+\.ya?ml(:\d+(:\d+)?)?: ")


@needs_corpus
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_validate_accepts_or_explains(cli, path: Path):
    result = cli("validate", path)
    assert "Traceback" not in result.output
    if result.exit_code == 0:
        assert result.stdout.startswith(f"{path}: valid")
        return
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len([line for line in lines if line.startswith("Error: ")]) == 1
    assert LOCATION.match(lines[0]), lines[0]


@needs_corpus
def test_corpus_tally():
    """Pins the outcome: what fails does so for a reason a user can act on."""
    ok = unsupported = missing_values = other = 0
    for path in FILES:
        try:
            check_supported(load_task(path))
            ok += 1
        except UnsupportedError as err:
            assert "skyform does not support" in err.message
            unsupported += 1
        except SpecError as err:
            if "has no value" in err.message:
                missing_values += 1
            else:
                # a local workdir or mount source that is not on this machine (the corpus
                # is SkyPilot's examples without their folders), or an empty bucket name
                assert err.field and err.field.startswith(("file_mounts", "workdir")), err
                other += 1
    assert len(FILES) == 168
    # other: local workdirs and mount sources that exist only on the author's machine, and
    # bucket names left empty (SkyPilot refuses those too)
    assert (ok, unsupported, missing_values, other) == (105, 15, 20, 28)


@needs_corpus
def test_null_variables_are_the_only_obstacle_once_supplied(tmp_path, monkeypatch):
    """Files that leave an env/secret null validate once it is given on the command line
    (and their workdir, ~/transformers, exists)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "transformers").mkdir()
    path = CORPUS / "spot_pipeline__bert_qa_train_eval.yaml"
    dag = load_task(path, TaskInputs(secrets=("WANDB_API_KEY=k",)))
    assert [t.name for t in dag.tasks] == ["train", "eval"]
    assert dag.edges == [(0, 1)]
