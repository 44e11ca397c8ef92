"""Per-cluster locks: one skyform process changes a cluster at a time.

An advisory `flock` on SKYFORM_HOME/locks/<cluster>.lock. The kernel drops it when the holder
dies (even `kill -9`), so a crashed apply never leaves a cluster locked. The holder writes its
pid and command into the file so the refusal can say who holds it.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skyform.config import confined, ensure_dir, home
from skyform.errors import LockedError

DEFAULT_WAIT = float(os.environ.get("SKYFORM_LOCK_WAIT", "5"))
POLL = 0.1


def lock_path(cluster: str) -> Path:
    return confined(ensure_dir(home() / "locks"), f"{cluster}.lock")


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return "another skyform process"
    return f"pid {info.get('pid', '?')} (`{info.get('command', 'skyform')}`)"


def flock_held(path: Path) -> bool:
    """Whether a live process holds an flock on `path` (a controller's lock file)."""
    if not path.exists():
        return False
    with open(path, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


@contextmanager
def cluster_lock(cluster: str, *, wait: float | None = None, purpose: str = "") -> Iterator[None]:
    """Hold the cluster's lock; wait up to `wait` seconds, then raise LockedError."""
    wait = DEFAULT_WAIT if wait is None else wait
    path = lock_path(cluster)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockedError(
                        f"cluster {cluster!r} is locked by {_holder(path)}; waited {wait:g} s",
                        "Wait for the other skyform command to finish, then run this again.",
                    ) from None
                time.sleep(POLL)
        command = purpose or " ".join(["skyform", *sys.argv[1:]])[:200]
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": command}).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock
