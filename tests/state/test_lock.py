"""Per-cluster locks (leases in the state store, on both stores): a second holder waits
briefly then fails clearly naming the holder; a crash releases; a lease renews while held,
and one whose holder stopped renewing frees itself at expiry."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from skyform.errors import LockedError
from skyform.state.db import open_state
from skyform.state.lock import cluster_lease, cluster_lock

pytestmark = pytest.mark.usefixtures("backend")

HOLD = (
    "import sys, time\n"
    "from skyform.state.lock import cluster_lock\n"
    "with cluster_lock('c1', purpose='skyform apply plan.json'):\n"
    "    print('held', flush=True)\n"
    "    time.sleep(float(sys.argv[1]))\n"
)


def _holder(seconds: float, home) -> subprocess.Popen:
    env = dict(os.environ, SKYFORM_HOME=str(home))
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(seconds)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_locker_fails_with_who_holds_it(skyform_home):
    proc = _holder(30, skyform_home)
    try:
        started = time.monotonic()
        with pytest.raises(LockedError) as err, cluster_lock("c1", wait=0.5):
            pass
        assert 0.4 < time.monotonic() - started < 3
        assert f"pid {proc.pid}" in err.value.message
        assert "skyform apply plan.json" in err.value.message
        assert "skyform force-unlock c1" in (err.value.hint or "")
        with cluster_lock("other", wait=0):  # other clusters are not affected
            pass
    finally:
        proc.kill()
        proc.wait()


def test_waiter_gets_lock_when_holder_finishes(skyform_home):
    proc = _holder(0.5, skyform_home)
    with cluster_lock("c1", wait=10):
        pass
    proc.wait()


def test_kill_9_releases_the_lock(skyform_home):
    proc = _holder(60, skyform_home)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with cluster_lock("c1", wait=1):
        pass


def test_a_held_lease_is_renewed_past_its_lifetime(monkeypatch):
    monkeypatch.setenv("SKYFORM_LEASE_TTL", "0.6")
    with cluster_lock("c1", wait=0):
        time.sleep(1.5)  # more than two lifetimes: only renewals keep it
        with open_state() as db:
            lease = db.get_lease(cluster_lease("c1"))
            assert lease is not None and lease.pid == os.getpid()
            assert db.try_lease(cluster_lease("c1"), purpose="x", ttl=1) is None
    with open_state() as db:
        assert db.get_lease(cluster_lease("c1")) is None  # released on exit


def test_a_lease_whose_holder_stopped_renewing_frees_itself_at_expiry(monkeypatch):
    """A holder on another machine cannot be asked whether it lives: its lease runs out."""
    with open_state() as db:
        stuck = db.try_lease(cluster_lease("c1"), purpose="skyform apply p.json", ttl=1.0)
        assert stuck is not None
        with db.transaction() as conn:  # as if it ran elsewhere (its pid means nothing here)
            conn.execute("UPDATE leases SET host='ci-runner-7' WHERE name=?", (stuck.name,))
    with pytest.raises(LockedError, match=r"ci-runner|pid"), cluster_lock("c1", wait=0.2):
        pass
    started = time.monotonic()
    with cluster_lock("c1", wait=5):
        assert 0.3 < time.monotonic() - started < 2.5
