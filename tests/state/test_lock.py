"""Per-cluster locks: a second holder waits briefly then fails clearly; crashes release."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from skyform.errors import LockedError
from skyform.state.lock import cluster_lock

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
