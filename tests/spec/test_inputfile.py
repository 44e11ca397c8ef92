"""read_input_file: one bounded read for regular files, devices, pipes and FIFOs."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from skyform.errors import SkyformError
from skyform.inputfile import read_input_file


def test_regular_file_is_read_whole(tmp_path: Path):
    path = tmp_path / "t.yaml"
    path.write_bytes(b"run: echo hi\n")
    assert read_input_file(path, 100) == b"run: echo hi\n"


def test_regular_file_over_the_cap_is_refused_before_reading(tmp_path: Path):
    path = tmp_path / "big.yaml"
    path.write_bytes(b"x" * 101)
    with pytest.raises(SkyformError, match="file is larger than 100 bytes"):
        read_input_file(path, 100)


def test_dev_zero_stops_at_the_cap():
    started = time.monotonic()
    with pytest.raises(SkyformError, match="/dev/zero: file is larger than"):
        read_input_file("/dev/zero", 1024 * 1024)
    assert time.monotonic() - started < 5


def test_fifo_without_a_writer_fails_after_the_wait(tmp_path: Path):
    fifo = tmp_path / "task.yaml"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(SkyformError, match=r"nothing arrived within 0\.3 s"):
        read_input_file(fifo, 1000, wait=0.3)
    assert time.monotonic() - started < 3


def test_fifo_with_a_late_writer_is_read(tmp_path: Path):
    fifo = tmp_path / "task.yaml"
    os.mkfifo(fifo)

    def write() -> None:
        time.sleep(0.3)
        with open(fifo, "wb") as fh:
            fh.write(b"run: echo ")
            fh.flush()
            time.sleep(0.2)
            fh.write(b"hi\n")

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert read_input_file(fifo, 1000, wait=5) == b"run: echo hi\n"
    finally:
        writer.join()


def test_endless_fifo_stops_at_the_cap(tmp_path: Path):
    fifo = tmp_path / "task.yaml"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat /dev/zero > {fifo}"], stderr=subprocess.DEVNULL)
    try:
        with pytest.raises(SkyformError, match="file is larger than"):
            read_input_file(fifo, 1024 * 1024, wait=5)
    finally:
        writer.kill()
        writer.wait()


def test_symlink_loop_is_named(tmp_path: Path):
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(tmp_path / "loop.yaml")
    with pytest.raises(SkyformError, match="symbolic link loop"):
        read_input_file(loop, 100)


def test_directory_and_missing_file(tmp_path: Path):
    with pytest.raises(SkyformError, match="is a directory"):
        read_input_file(tmp_path, 100)
    with pytest.raises(SkyformError, match="no such file"):
        read_input_file(tmp_path / "nope.yaml", 100)


@pytest.mark.parametrize("name", ["-", "/dev/stdin", "/dev/fd/0"])
def test_stdin_is_refused_by_name(name: str):
    with pytest.raises(SkyformError, match="from standard input is not supported"):
        read_input_file(name, 100, what="a task file")


def test_callers_choose_the_error_branch(tmp_path: Path):
    class Mine(SkyformError):
        pass

    with pytest.raises(Mine):
        read_input_file(tmp_path / "nope", 10, error=lambda message, hint: Mine(message, hint))
