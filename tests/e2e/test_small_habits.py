"""Small things a SkyPilot user noticed on `launch` (issue 28): an unnamed task is called
after its file, as SkyPilot names it (not `task #1`); no doubled words ("autostop
autostop"); "1 file", not "1 files"."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e

UNNAMED = (
    "workdir: wd\n"
    "resources:\n  infra: local\n  autostop: {idle_minutes: 10, down: true}\n"
    "run: echo hi\n"
)


def test_launch_of_an_unnamed_task_reads_as_a_user_would_write_it(sky, tmp_path):
    (tmp_path / "wd").mkdir()
    (tmp_path / "wd" / "train.py").write_text("print('hi')\n")
    out = sky("launch", "-y", task_file(tmp_path, "train.yaml", UNNAMED), check=0).stdout
    assert "(task 'train', 1 node)" in out and "task #1" not in out
    assert "run `train`" in out
    assert "node 0: autostop 10m (down): the node agent checks every" in out
    assert "autostop autostop" not in out
    assert "~/skyform_workdir: 1 file sent (" in out
    sky("down", "-y", "train", check=0)


def test_a_lock_held_by_launch_names_the_command_typed(sky, tmp_path, skyform_home):
    """What another command is told while `launch` holds the cluster (`cluster 'lk' is
    locked by ... (`skyform launch lk.yaml`)`), read from the lease it holds."""
    from skyform.state.db import open_state

    task_file(tmp_path, "lk.yaml", "name: lk\nresources: {infra: local}\nrun: echo hi\n")
    env = dict(os.environ, SKYFORM_HOME=str(skyform_home))
    launching = subprocess.Popen(
        [sys.executable, "-m", "skyform.cli.main", "launch", "-y", "lk.yaml"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    held: set[str] = set()
    try:
        while launching.poll() is None:
            if (skyform_home / "state.db").exists():
                db = open_state()
                held |= {lease.purpose for lease in db.list_leases("cluster/lk")}
                db.close()
            time.sleep(0.05)
    finally:
        launching.wait(timeout=120)
    assert held == {"skyform launch lk.yaml"}
    sky("down", "-y", "lk", check=0)
