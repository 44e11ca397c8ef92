"""Per-cluster locks: one skyform process changes a cluster at a time, on any machine.

A lock is a lease in the state store (leases.py) named `cluster/<name>`, with its holder
(user@host, pid, command) and an expiry that a background thread renews while the lock is
held. A holder that dies frees it: at once when it ran on this host (its pid is gone), else
when its lease runs out (SKYFORM_LEASE_TTL seconds, 30 by default). `skyform force-unlock
CLUSTER` frees it by hand, as Terraform's `force-unlock` does.

`flock_held` is the older file-lock test the service and job controllers use for their own
pid files.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skyform.config import confined, ensure_dir, home
from skyform.errors import Fenced, LockedError, SkyformError
from skyform.state import fencing
from skyform.state.leases import lease_ttl
from skyform.state.sqlcore import command_line

DEFAULT_WAIT = float(os.environ.get("SKYFORM_LOCK_WAIT", "5"))
POLL = 0.1


def cluster_lease(cluster: str) -> str:
    return f"cluster/{cluster}"


def lock_path(cluster: str) -> Path:
    return confined(ensure_dir(home() / "locks"), f"{cluster}.lock")


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


class Renewer(threading.Thread):
    """Renews a lease every third of its lifetime, on a connection of its own, until
    stopped; `lost` says the lease was taken from it (force-unlock, or a stall past expiry)."""

    def __init__(self, store, lease, ttl: float) -> None:
        super().__init__(name=f"lease {lease.name}", daemon=True)
        self.store, self.lease, self.ttl = store, lease, ttl
        self.stopped = threading.Event()
        self.lost = False

    def run(self) -> None:
        store = None
        try:
            while not self.stopped.wait(self.ttl / 3):
                try:
                    store = store or self.store.reopen()
                    if not store.renew_lease(self.lease, self.ttl):
                        self._lose()
                        return
                except Fenced:  # a fenced process whose lease was taken anew
                    self._lose()
                    return
                except SkyformError:  # the database is away: try again at the next beat
                    store = None
        finally:
            if store is not None:
                store.close()

    def _lose(self) -> None:
        self.lost = True
        fence = fencing.active()
        if fence is not None and fence.name == self.lease.name:
            fencing.lose()  # the process acting under it stops at its next check

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)


@contextmanager
def held_lease(
    name: str, *, what: str, wait: float | None = None, purpose: str = ""
) -> Iterator[None]:
    """Hold the lease `name`; wait up to `wait` seconds, then raise LockedError."""
    from skyform.state.store import open_state

    wait = DEFAULT_WAIT if wait is None else wait
    ttl = lease_ttl()
    purpose = purpose or command_line()
    deadline = time.monotonic() + wait
    with open_state() as store:
        while True:
            lease = store.try_lease(name, purpose=purpose, ttl=ttl)
            if lease is not None:
                break
            if time.monotonic() >= deadline:
                raise _locked(store, name, what, wait)
            time.sleep(POLL)
        renewer = Renewer(store, lease, ttl)
        renewer.start()
        try:
            yield
        finally:
            renewer.stop()
            store.release_lease(lease)


def _locked(store, name: str, what: str, wait: float) -> LockedError:
    holder = store.get_lease(name)
    who = holder.describe() if holder else "another skyform process"
    expiry = ""
    if holder is not None:
        left = max(0.0, holder.expires_at - store.now())
        expiry = f" Its lease runs out in {left:.0f} s unless its holder renews it."
    unlock = name.split("/", 1)[-1]
    return LockedError(
        f"{what} is locked by {who}; waited {wait:g} s",
        "Wait for the other skyform command to finish, then run this again." + expiry + " "
        f"If that process is gone for good: skyform force-unlock {unlock}",
    )


@contextmanager
def cluster_lock(cluster: str, *, wait: float | None = None, purpose: str = "") -> Iterator[None]:
    """Hold the cluster's lock; wait up to `wait` seconds, then raise LockedError. `cluster`
    may be as typed (`my_cluster`): the lock is its engine name's (`my-cluster`)."""
    from skyform.plan.naming import engine_name

    cluster = engine_name(cluster)
    with held_lease(
        cluster_lease(cluster), what=f"cluster {cluster!r}", wait=wait, purpose=purpose
    ):
        yield
