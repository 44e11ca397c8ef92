"""Driving `skyform serve` as a user does (the CLI as its own process), with short probe and
decision intervals, and a client loop that counts every answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter

APP_ENV = {
    "SKYFORM_SERVE_PROBE_INTERVAL": "0.5",
    "SKYFORM_SERVE_DECISION_INTERVAL": "0.5",
    "NO_COLOR": "1",
}


def skyform(
    *args: str, check: bool = True, cwd: str | os.PathLike[str] | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "skyform.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **APP_ENV},
        stdin=subprocess.DEVNULL,
        timeout=300,
        cwd=cwd,
    )
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def record_of(name: str) -> dict:
    return json.loads(skyform("serve", "status", name, "--json").stdout)[0]


def wait_for(name: str, status: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        record = record_of(name)
        if record["status"] == status:
            return record
        assert time.monotonic() < deadline, record
        time.sleep(0.5)


def wait_until(name: str, check, timeout: float = 90) -> dict:
    """The service's record once `check(record)` holds."""
    deadline = time.monotonic() + timeout
    while True:
        record = record_of(name)
        if check(record):
            return record
        assert time.monotonic() < deadline, record
        time.sleep(0.3)


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status, resp.headers["X-Replica"]


class Clients:
    """`n` client threads running `_run` until the `with` block ends."""

    def __init__(self, n: int) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run) for _ in range(n)]

    def _run(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


class ClientLoop(Clients):
    """`clients` threads calling `url` back to back until stopped; every outcome counted
    (HTTP status, or the exception's name), with the app versions that answered."""

    def __init__(self, url: str, clients: int = 8) -> None:
        self.url = url
        self.outcomes: Counter = Counter()
        self.versions: Counter = Counter()
        super().__init__(clients)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=30) as resp:
                    resp.read()
                    outcome, version = resp.status, resp.headers.get("X-App-Version")
            except urllib.error.HTTPError as exc:
                outcome, version = exc.code, None
            except OSError as exc:
                outcome, version = type(exc).__name__, None
            with self._lock:
                self.outcomes[outcome] += 1
                if version:
                    self.versions[version] += 1

    @property
    def failed(self) -> int:
        return sum(n for outcome, n in self.outcomes.items() if outcome != 200)
