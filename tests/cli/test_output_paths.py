"""Files skyform writes for a user (`plan -o`, `export -o`, `state migrate --to`): a
device, a FIFO, a socket, a directory, or a link to one of them is refused with exit 1 and
nothing changes (issue 26). `plan -o /dev/full` once replaced the device with a JSON file,
so `-o /dev/null` would have broken the machine; `-o .` was an internal error.

The devices here are made with mknod in the test's folder, never the real /dev ones."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

HELLO = "name: hello\nresources: {infra: local}\nrun: echo hello\n"
GPU = "name: gpu\nresources: {infra: aws/us-east-1, accelerators: L4:1}\nrun: nvidia-smi\n"


@pytest.fixture
def places(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """Every kind of thing a path can name that is not a regular file."""
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    folder = tmp_path / "folder"
    folder.mkdir()
    (tmp_path / "to-null").symlink_to(null)
    (tmp_path / "to-fifo").symlink_to(fifo)
    (tmp_path / "to-folder").symlink_to(folder)
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    yield {
        "device": null,
        "fifo": fifo,
        "socket": sock_path,
        "directory": folder,
        "link to a device": tmp_path / "to-null",
        "link to a fifo": tmp_path / "to-fifo",
        "link to a directory": tmp_path / "to-folder",
        "link loop": tmp_path / "loop",
    }
    sock.close()


def _snapshot(tmp_path: Path) -> dict[str, tuple[int, int, str | None]]:
    """Every entry's kind, mode and link target: what "nothing changed" compares."""
    return {
        p.name: (
            stat.S_IFMT(os.lstat(p).st_mode),
            stat.S_IMODE(os.lstat(p).st_mode),
            os.readlink(p) if p.is_symlink() else None,
        )
        for p in tmp_path.iterdir()
    }


KINDS = [
    "device",
    "fifo",
    "socket",
    "directory",
    "link to a device",
    "link to a fifo",
    "link to a directory",
    "link loop",
]
WORDS = {
    "device": "it is a character device",
    "fifo": "it is a FIFO (named pipe)",
    "socket": "it is a socket",
    "directory": "it is a directory",
    "link to a device": "it is a character device (through a symbolic link)",
    "link to a fifo": "it is a FIFO (named pipe) (through a symbolic link)",
    "link to a directory": "it is a directory (through a symbolic link)",
    "link loop": "it is a symbolic link loop",
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt", [(), ("--json",)], ids=["text", "json"])
def test_plan_o_refuses_anything_but_a_regular_file(cli, tmp_path, places, kind, fmt):
    task = tmp_path / "hello.yaml"
    task.write_text(HELLO)
    before = _snapshot(tmp_path)
    result = cli("plan", task, "-o", places[kind], *fmt)
    assert result.exit_code == 1, result.output
    assert f"refusing to write the plan to {places[kind]}: {WORDS[kind]}" in result.stderr
    assert "nothing was written" in result.stderr
    assert "internal error" not in result.output
    assert _snapshot(tmp_path) == before


def test_plan_o_dev_null_stand_in_stays_a_character_device(cli, tmp_path):
    task = tmp_path / "hello.yaml"
    task.write_text(HELLO)
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    assert cli("plan", task, "-o", null).exit_code == 1
    info = os.lstat(null)
    assert stat.S_ISCHR(info.st_mode) and info.st_rdev == os.makedev(1, 3)


@pytest.mark.parametrize("out", [".", "..", "sub/", "./"])
def test_plan_o_a_directory_spelling_is_a_clear_error(cli, tmp_path, monkeypatch, out):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hello.yaml").write_text(HELLO)
    result = cli("plan", "hello.yaml", "-o", out)
    assert result.exit_code == 1, result.output
    assert f"refusing to write the plan to {out}: it names a directory" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hello.yaml"]


def test_plan_o_through_a_link_to_a_regular_file_writes_the_file_and_keeps_the_link(cli, tmp_path):
    """As shell redirection and `terraform plan -out` do; the file keeps its mode."""
    task = tmp_path / "hello.yaml"
    task.write_text(HELLO)
    real = tmp_path / "plans" / "hello.json"
    real.parent.mkdir()
    real.write_text("old")
    os.chmod(real, 0o600)
    link = tmp_path / "plan.json"
    link.symlink_to(real)
    result = cli("plan", task, "-o", link)
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text().startswith("{")
    assert stat.S_IMODE(real.stat().st_mode) == 0o600


@pytest.mark.parametrize("kind", KINDS)
def test_export_o_refuses_anything_but_a_directory(cli, tmp_path, places, kind):
    task = tmp_path / "gpu.yaml"
    task.write_text(GPU)
    plan = tmp_path / "gpu.json"
    assert cli("plan", task, "-o", plan).exit_code == 0
    target = places[kind]
    if kind in ("directory", "link to a directory"):
        os.mkfifo(target / "gpu")  # where the cluster's project would go
        problem = "it is a FIFO (named pipe), not a directory"
        where = places["directory"] / "gpu"  # named as it resolves
    else:
        problem = WORDS[kind].replace(" (through a symbolic link)", "") + (
            "" if kind == "link loop" else ", not a directory"
        )
        where = places[kind]
    before = _snapshot(tmp_path)
    inside = _snapshot(places["directory"])
    result = cli("export", plan, "-o", places[kind])
    assert result.exit_code == 1, result.output
    assert f"to {where}: {problem}" in result.stderr, result.stderr
    assert "internal error" not in result.output
    assert _snapshot(tmp_path) == before and _snapshot(places["directory"]) == inside


def test_export_refuses_a_fifo_among_a_projects_files_before_writing_any(cli, tmp_path):
    task = tmp_path / "gpu.yaml"
    task.write_text(GPU)
    plan = tmp_path / "gpu.json"
    assert cli("plan", task, "-o", plan).exit_code == 0
    project = tmp_path / "out" / "gpu"
    project.mkdir(parents=True)
    os.mkfifo(project / "__main__.py")
    result = cli("export", plan, "-o", tmp_path / "out")
    assert result.exit_code == 1
    assert f"{project / '__main__.py'}: it is a FIFO (named pipe)" in result.stderr
    assert [p.name for p in project.iterdir()] == ["__main__.py"]


@pytest.mark.parametrize("kind", KINDS)
def test_state_migrate_to_refuses_anything_but_a_regular_file(cli, tmp_path, places, kind):
    before = _snapshot(tmp_path)
    inside = _snapshot(places["directory"])
    result = cli("state", "migrate", "--to", f"sqlite:///{places[kind]}")
    assert result.exit_code == 1, result.output
    assert f"the state file {places[kind]} is " in result.stderr
    assert "internal error" not in result.output
    assert _snapshot(tmp_path) == before and _snapshot(places["directory"]) == inside
