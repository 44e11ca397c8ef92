"""A throw-away PostgreSQL server for the tests: initdb + pg_ctl in a temp dir, on a free
loopback port, trust auth for the `skyform` role. Debian's `postgresql` package provides the
binaries (.ci/run installs it). PostgreSQL refuses to run as root, so as root the server
runs as the `postgres` user the package creates.

`pg_server` (session) starts one per test process; `pg_url` (function) gives each test a
database of its own on it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest


def _bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PgServer:
    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="skyform-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        subprocess.run(
            [*self._as, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def init(self) -> None:
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-A",
            "trust",
            "-U",
            "skyform",
            "-E",
            "UTF8",
            "--no-sync",
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "server.log"),
            "-w",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://skyform@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def cleanup(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


def start_server() -> PgServer:
    """A running server, or pytest.skip with the reason when PostgreSQL is not installed."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install 'skyform[postgres]')")
    bindir = _bindir()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    server = PgServer(bindir)
    try:
        server.init()
        server.start()
    except (subprocess.CalledProcessError, OSError) as exc:
        server.cleanup()
        detail = getattr(exc, "stderr", b"") or b""
        pytest.fail(f"could not start PostgreSQL: {exc} {detail.decode(errors='replace')}")
    return server


@pytest.fixture(scope="session")
def pg_server():
    server = start_server()
    yield server
    server.cleanup()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    return pg_server.new_database()
