"""Start a test server on a free loopback port and wait until it answers (moto, the GCS
emulator): one way to start them, fail with the server's last words, stop it after."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def venv_tool(name: str) -> str | None:
    """A console script of this interpreter's environment, else one on PATH."""
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else shutil.which(name)


def serve_tool(
    tmp_path_factory, tool: str, install: str, args: Callable[[int], list[str]], probe: str
) -> Iterator[str]:
    """`serve` a console script (skipped when it is not installed: `install` says how)."""
    binary = venv_tool(tool)
    if binary is None:
        pytest.skip(f"{tool} not installed ({install})")
    log = tmp_path_factory.mktemp(tool) / f"{tool}.log"
    yield from serve(lambda port: [binary, *args(port)], probe, log, tool)


def serve(
    argv: Callable[[int], list[str]], probe: str, log: Path, what: str, host: str = "127.0.0.1"
) -> Iterator[str]:
    """Run `argv(port)`, yield its base URL once `probe` (a path) answers, then stop it.
    `host`: the address it listens on (loopback unless others, a pod network, must reach it)."""
    port = free_port(host)
    with log.open("w") as out:
        proc = subprocess.Popen(argv(port), stdout=out, stderr=subprocess.STDOUT)
    url = f"http://{host}:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + probe, timeout=1)
            break
        except urllib.error.HTTPError:
            break  # it answers, if not with 200
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"{what} exited: {log.read_text()[-500:]}")
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail(f"{what} did not start within 30 s")
    yield url
    proc.terminate()
    proc.wait(timeout=10)
