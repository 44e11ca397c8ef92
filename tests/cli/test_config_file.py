"""config.yaml is read as task files are (issue 26): a FIFO with no writer is an error
after a while, not a hang; a directory, a symbolic link loop or a link to nothing is a
clear error, never silently "no config" (the pools and storage settings would vanish)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

HELLO = "name: hello\nresources: {infra: local}\nrun: echo hello\n"
VERBS = [["status"], ["plan", "{task}"], ["check"], ["launch", "{task}", "-y"]]


def _args(verb: list[str], task: Path) -> list[str]:
    return [word.format(task=task) for word in verb]


@pytest.fixture
def task(tmp_path: Path) -> Path:
    path = tmp_path / "hello.yaml"
    path.write_text(HELLO)
    return path


def _loop(config: Path) -> str:
    config.symlink_to(config.with_name("other.yaml"))
    config.with_name("other.yaml").symlink_to(config)
    return "a symbolic link loop (a link that leads back to itself)"


def _directory(config: Path) -> str:
    config.mkdir()
    return "is a directory, not config.yaml"


def _dangling(config: Path) -> str:
    config.symlink_to(config.with_name("moved-away.yaml"))
    return "no such file"


@pytest.mark.parametrize("make", [_loop, _directory, _dangling], ids=["loop", "dir", "dangling"])
@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
def test_a_config_that_is_not_a_file_is_a_clear_error(cli, task, skyform_home, make, verb):
    config = skyform_home / "config.yaml"
    said = make(config)
    result = cli(*_args(verb, task))
    assert result.exit_code == 1, result.output
    assert f"Error: {config}: {said}" in result.stderr, result.stderr
    assert "config.yaml as a regular YAML file" in result.stderr
    assert "internal error" not in result.output
    assert not (skyform_home / "state.db").exists()


def test_a_config_fifo_without_a_writer_fails_instead_of_hanging(
    cli, task, skyform_home, monkeypatch
):
    monkeypatch.setenv("SKYFORM_INPUT_WAIT", "0.5")
    os.mkfifo(skyform_home / "config.yaml")
    started = time.monotonic()
    result = cli("plan", task)
    assert result.exit_code == 1
    assert "config.yaml: nothing arrived within 0.5 s" in result.stderr
    assert time.monotonic() - started < 20


def test_a_huge_config_is_refused_at_the_cap(cli, task, skyform_home):
    (skyform_home / "config.yaml").write_bytes(b"# " + b"x" * (5 * 1024 * 1024))
    result = cli("plan", task)
    assert result.exit_code == 1
    assert "file is larger than 4 MB, too large for config.yaml" in result.stderr
