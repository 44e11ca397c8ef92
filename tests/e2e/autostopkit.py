"""Helpers for the autostop end-to-end tests (importable as `autostopkit`)."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import sys
import time
from pathlib import Path

import yaml


def set_interval(home: Path, seconds: int) -> None:
    """config.yaml's autostop.check_interval (kept next to the pool written before)."""
    path = home / "config.yaml"
    config = yaml.safe_load(path.read_text()) if path.exists() else {}
    config = config or {}
    config["autostop"] = {"check_interval": seconds}
    path.write_text(yaml.safe_dump(config))


def statuses(sky, *, refresh: bool) -> dict[str, dict]:
    args = ["status", "--json"] + (["--refresh"] if refresh else [])
    return {c["name"]: c for c in json.loads(sky(*args, check=0).stdout)}


def last_job_end(sky, cluster: str) -> float:
    jobs = json.loads(sky("queue", cluster, "--json", check=0).stdout)
    return max(j["ended_at"] for j in jobs)


def wait_gone(sky, cluster: str, *, within: float, refresh: bool, poll: float = 3) -> float:
    """Poll `status` until `cluster` is gone; the time it was first seen gone."""
    deadline = time.time() + within
    while time.time() < deadline:
        if cluster not in statuses(sky, refresh=refresh):
            return time.time()
        time.sleep(poll)
    raise AssertionError(f"{cluster} still in status after {within:.0f} s")


class Session:
    """`skyform ssh CLUSTER` on a pseudo-terminal that is its controlling terminal, as in a
    user's terminal window (pty.fork, not just a tty on stdin)."""

    def __init__(self, home: Path, cluster: str, cwd: Path) -> None:
        env = dict(os.environ, SKYFORM_HOME=str(home), TERM="xterm")
        argv = [sys.executable, "-m", "skyform.cli.main", "ssh", cluster]
        pid, self.master = pty.fork()
        if pid == 0:  # the child: its controlling terminal is the pty's slave
            try:
                os.chdir(cwd)
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid = pid

    def wait_for_prompt(self, marker: str = "ready-for-input", timeout: float = 30) -> None:
        os.write(self.master, f"echo {marker[:5]}''{marker[5:]}\n".encode())
        seen, deadline = b"", time.time() + timeout
        while marker.encode() not in seen:
            if time.time() > deadline:
                raise AssertionError(f"no shell prompt: {seen[-400:]!r}")
            import select

            ready, _, _ = select.select([self.master], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(self.master, 4096)
                except OSError:
                    break

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.master, b"exit\n")
        deadline = time.time() + 10
        while time.time() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            self._drain()
            time.sleep(0.1)
        else:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        os.close(self.master)

    def _drain(self) -> None:
        import select

        while select.select([self.master], [], [], 0)[0]:
            try:
                if not os.read(self.master, 4096):
                    return
            except OSError:
                return
