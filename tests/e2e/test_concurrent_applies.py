"""Staleness decided per cluster, atomically: independent plans applied at once all apply,
every time; a second plan for the same cluster is refused naming what changed; a refused
apply creates nothing; a `down` killed mid-teardown never leaves `status` saying UP."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e


def _task(name: str, run: str = "echo hi from $SKYFORM_NODE_RANK") -> str:
    return f"name: {name}\nresources: {{infra: local}}\nrun: {run}\n"


def _spawn(home: Path, cwd: Path, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, SKYFORM_HOME=str(home), COLUMNS="200", NO_COLOR="1")
    return subprocess.Popen(
        [sys.executable, "-m", "skyform.cli.main", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


@pytest.mark.parametrize("round_", range(5))
def test_five_plans_for_five_clusters_from_one_state_all_apply_at_once(
    sky, skyform_home, tmp_path, round_
):
    sky("apply", task_file(tmp_path, "base.yaml", _task("base")), "-y", check=0)  # serial > 0
    names = [f"c{i}" for i in range(5)]
    for name in names:
        sky("plan", task_file(tmp_path, f"{name}.yaml", _task(name)), "-o", f"{name}.json", check=0)
    procs = [_spawn(skyform_home, tmp_path, "apply", f"{name}.json") for name in names]
    results = [(p.wait(timeout=240), p.stdout.read() if p.stdout else "") for p in procs]
    assert [code for code, _ in results] == [0] * 5, "\n".join(out for _, out in results)
    status = {c["name"]: c["status"] for c in json.loads(sky("status", "--json").stdout)}
    assert status == {"base": "UP", **dict.fromkeys(names, "UP")}
    sky("down", "-a", "-y", check=0)


def test_second_plan_for_the_same_cluster_is_stale_naming_it(sky, tmp_path):
    task = task_file(tmp_path, "one.yaml", _task("one"))
    other = task_file(tmp_path, "two.yaml", _task("two"))
    sky("plan", task, "-o", "first.json", check=0)
    sky("plan", task, "-o", "second.json", check=0)
    sky("plan", other, "-o", "other.json", check=0)
    sky("apply", "first.json", check=0)
    second = sky("apply", "second.json")
    assert second.exit_code == 3
    assert "is stale: cluster one (up) changed since the plan was made" in second.stderr
    assert sky("apply", "other.json").exit_code == 0  # `two` did not change: still fresh
    sky("down", "-a", "-y", check=0)


def test_a_stale_apply_creates_no_state_and_no_locks(sky, skyform_home, tmp_path):
    task = task_file(tmp_path, "one.yaml", _task("one"))
    sky("plan", task, "-o", "plan.json", check=0)
    task.write_text(_task("one", run="echo edited"))
    edited = sky("apply", "plan.json")
    assert edited.exit_code == 3 and "changed since the plan was made" in edited.stderr
    task.unlink()
    gone = sky("apply", "plan.json")
    assert gone.exit_code == 3  # the README: a task that moved on is a stale plan
    assert "is stale: its task file" in gone.stderr and "is gone" in gone.stderr
    corrupt = tmp_path / "corrupt plan.json"
    corrupt.write_text('{"format_version": 1, "tasks": ')
    refused = sky("apply", corrupt.name)
    assert refused.exit_code == 1 and "corrupt" in refused.stderr
    assert not (skyform_home / "state.db").exists()
    assert not (skyform_home / "locks").exists()


def _status_in_state(home: Path, name: str) -> str | None:
    conn = sqlite3.connect(home / "state.db", timeout=30)
    try:
        row = conn.execute("SELECT status FROM clusters WHERE name=?", (name,)).fetchone()
    finally:
        conn.close()
    return row[0] if row else None


def test_down_killed_mid_teardown_leaves_status_truthful_and_a_second_down_finishes(
    sky, skyform_home, tmp_path
):
    # a job that ignores SIGTERM: teardown waits a second before it KILLs it
    stubborn = "trap '' TERM; sleep 300"
    task = task_file(tmp_path, "slow.yaml", _task("slow", run=json.dumps(stubborn)))
    sky("launch", task, "-y", "--detach-run", check=0)
    down = _spawn(skyform_home, tmp_path, "down", "-y", "slow")
    deadline = time.monotonic() + 30
    while (seen := _status_in_state(skyform_home, "slow")) == "UP":
        assert time.monotonic() < deadline, "down never started tearing down"
        time.sleep(0.02)
    assert seen == "INIT"  # marked before the teardown starts, not forgotten at the end only
    os.killpg(down.pid, signal.SIGKILL)  # mid-teardown: the stubborn job holds it a second
    down.wait(timeout=30)
    left = {c["name"]: c["status"] for c in json.loads(sky("status", "--json").stdout)}
    assert left == {"slow": "INIT"}
    again = sky("down", "-y", "slow", check=0)
    assert "slow" in again.stdout
    assert json.loads(sky("status", "--json", check=0).stdout) == []
