"""Plan files: deterministic bytes, atomic writes, clear refusals of bad files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from factory import create_plan

from skyform.errors import PlanFileError
from skyform.plan.model import FORMAT_VERSION
from skyform.plan.planfile import plan_bytes, read_plan, write_plan


def test_round_trip_is_identical(tmp_path):
    plan = create_plan()
    path = tmp_path / "plan.json"
    data = write_plan(plan, path)
    loaded, raw = read_plan(path)
    assert loaded == plan
    assert raw == data == plan_bytes(loaded)


def test_bytes_are_sorted_json_with_rounded_floats():
    data = plan_bytes(create_plan()).decode()
    assert data.endswith("}\n")
    keys = list(json.loads(data))
    assert keys == sorted(keys)
    assert "2.4655" in data and "2.4655000000" not in data


def test_same_plan_same_bytes_across_processes(tmp_path):
    script = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from factory import create_plan\n"
        "from skyform.plan.planfile import plan_bytes\n"
        "sys.stdout.buffer.write(plan_bytes(create_plan()))\n"
    )
    outputs = set()
    for seed in ("1", "2", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outputs.add(
            subprocess.run(
                [sys.executable, "-c", script], env=env, check=True, capture_output=True
            ).stdout
        )
    assert len(outputs) == 1
    assert outputs.pop() == plan_bytes(create_plan())


def test_failed_write_leaves_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "plan.json"
    path.write_text("previous")

    def boom(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        write_plan(create_plan(), path)
    assert path.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "invalid JSON at line 1 column 1"),
        ('{"format_version": 1, "tasks": [', "invalid JSON"),
        ("[1, 2]", "is not a skyform plan (no format_version)"),
        ('{"hello": 1}', "is not a skyform plan (no format_version)"),
        (
            '{"format_version": 99, "skyform_version": "9.9"}',
            "plan format version 99 (written by skyform 9.9); this skyform reads format version 2",
        ),
        ('{"format_version": 1}', "format version 1 (written by skyform an unknown version)"),
        ('{"format_version": 2}', "corrupt or was edited: skyform_version: Field required"),
        ('{"format_version": true}', "corrupt or was edited: format_version: format_version is"),
    ],
)
def test_bad_files_are_refused_clearly(tmp_path, content, message):
    path = tmp_path / "plan.json"
    path.write_text(content)
    with pytest.raises(PlanFileError) as err:
        read_plan(path)
    assert message in err.value.message
    assert err.value.hint


def test_edited_field_of_wrong_type_is_corrupt(tmp_path):
    raw = json.loads(plan_bytes(create_plan()))
    raw["tasks"][0]["num_nodes"] = "many"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(PlanFileError, match=r"edited: tasks\.0\.num_nodes: Input should be"):
        read_plan(path)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(PlanFileError, match="no plan file at"):
        read_plan(tmp_path / "nope.json")
    with pytest.raises(PlanFileError, match="is a directory"):
        read_plan(tmp_path)


def test_format_version_constant_is_what_files_carry():
    assert json.loads(plan_bytes(create_plan()))["format_version"] == FORMAT_VERSION


def test_show_cli_exit_codes(cli, tmp_path):
    path = tmp_path / "plan.json"
    write_plan(create_plan(), path)
    ok = cli("show", path)
    assert ok.exit_code == 0 and "Plan: 1 to add, 0 to change, 0 to destroy." in ok.stdout
    assert json.loads(cli("show", path, "--json").stdout) == json.loads(path.read_text())
    path.write_text("{")
    bad = cli("show", path)
    assert bad.exit_code == 1 and "is not a skyform plan" in bad.stderr
    assert "Traceback" not in bad.output


@pytest.mark.parametrize("verb", [("show",), ("apply", "-y"), ("cost",)])
def test_a_plan_from_a_fifo_or_a_device_is_an_error_not_a_hang(cli, tmp_path, monkeypatch, verb):
    monkeypatch.setenv("SKYFORM_INPUT_WAIT", "0.5")
    fifo = tmp_path / "plan.json"
    os.mkfifo(fifo)
    result = cli(*verb, fifo)
    assert result.exit_code == 1
    assert "nothing arrived within 0.5 s (a pipe or FIFO with no writer?)" in result.stderr
    zero = cli(*verb, "/dev/zero")
    assert zero.exit_code == 1 and "/dev/zero: file is larger than" in zero.stderr  # apply: a task
