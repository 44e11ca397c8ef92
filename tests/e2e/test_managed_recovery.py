"""Managed jobs on real sshd nodes in two labelled regions of an ssh pool (spot hosts):
preemption → detection → a new plan revision → relaunch → resume from the checkpoint."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest
import yaml
from e2ekit import managed_job, task_file, two_region_pool, wait_for_job

pytestmark = pytest.mark.e2e

COUNTER = """\
name: counter
resources:
  infra: ssh/lab
  use_spot: true
skyform:
  checkpoint_dir: {ckpt}
run: |
  umask 000  # test nodes are different unix users sharing one directory
  start=$(cat "$SKYFORM_CHECKPOINT_DIR/n" 2>/dev/null || echo 0)
  echo "recovery=$SKYFORM_RECOVERY_COUNT start=$start task=$SKYFORM_TASK_ID"
  for i in $(seq "$start" {steps}); do
    echo "step $i"; echo "$i" > "$SKYFORM_CHECKPOINT_DIR/n"; sleep 0.5
  done
"""


def _checkpoint(directory: Path) -> int:
    try:
        text = (directory / "n").read_text().strip()
    except OSError:
        return 0
    return int(text) if text.isdigit() else 0


def _host_running(nodes, i) -> bool:
    return bool(nodes.user_pids(i))


def _launch_counter(sky, tmp_path, ckpt, strategy, steps=16):
    task = task_file(tmp_path, "counter.yaml", COUNTER.format(ckpt=ckpt, steps=steps))
    sky("jobs", "launch", task, "--recovery", strategy, "-d", check=0)
    job = wait_for_job(sky, lambda j: j["status"] == "RUNNING")
    return job


def _revision(sky, rev) -> dict:
    return json.loads(sky("jobs", "plans", "1", "--show", str(rev), "--json", check=0).stdout)


@pytest.mark.parametrize("strategy", ["eager_next_region", "failover"])
def test_preempted_job_recovers_and_resumes_from_checkpoint(
    sky, skyform_home, make_ssh_nodes, tmp_path, shared_ckpt, strategy
):
    nodes = make_ssh_nodes(4)
    two_region_pool(skyform_home, nodes)
    job = _launch_counter(sky, tmp_path, shared_ckpt, strategy)
    assert job["tasks"][0]["offer"]["region"] == "east"
    deadline = time.monotonic() + 30
    while _checkpoint(shared_ckpt) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    killed = next(i for i in (0, 1) if _host_running(nodes, i))
    nodes.kill_node(killed)  # the spot reclaim

    job = wait_for_job(
        sky,
        lambda j: j["status"] in ("SUCCEEDED", "FAILED", "FAILED_NO_RESOURCE", "FAILED_CONTROLLER"),
        timeout=120,
    )
    assert job["status"] == "SUCCEEDED", sky(
        "jobs", "logs", "1", "--no-follow", "--controller", check=0
    ).stdout
    assert job["tasks"][0]["recovery_count"] == 1
    second = _revision(sky, 2)
    offer = second["tasks"][0]["offer"]
    if strategy == "eager_next_region":  # the launched region is blocked: west
        assert offer["region"] == "west"
        assert second["blocked"][0]["region"] == "east"
        assert "preempted in ssh/lab/east" in second["blocked"][0]["reason"]
    else:  # FAILOVER retries the launched region first: the other east host
        assert offer["region"] == "east"
        assert second["allowed"][0]["region"] == "east"
    (change,) = second["changes"]
    assert change["action"] == "replace" and "nodes were lost" in change["reason"]
    logs = sky("jobs", "logs", "1", "--no-follow", check=0).stdout
    assert "recovery=1 start=" in logs
    resumed = int(logs.split("recovery=1 start=")[1].split()[0])
    assert resumed >= 3  # resumed from the checkpoint, not from 0
    assert "task=skyform-managed-1-0" in logs  # same task id across recoveries
    assert (
        json.loads(sky("status", "--json", check=0).stdout) == []
    )  # clusters torn down at the end


def test_user_failure_restarts_once_then_fails(sky, skyform_home, fresh_ssh_nodes, tmp_path):
    two_region_pool(skyform_home, fresh_ssh_nodes)
    task = task_file(
        tmp_path,
        "fail.yaml",
        """\
name: flaky
resources:
  infra: ssh/lab
  use_spot: true
  job_recovery: {max_restarts_on_errors: 1}
run: echo "attempt $SKYFORM_RECOVERY_COUNT"; exit 3
""",
    )
    result = sky("jobs", "launch", task, timeout=120)
    assert result.exit_code == 1
    assert "attempt 0" in result.stdout and "attempt 1" in result.stdout
    job = managed_job(sky)
    assert job["status"] == "FAILED" and job["tasks"][0]["restarts"] == 1
    assert "after 1 restart(s)" in job["reason"]
    transitions = [
        e
        for e in sqlite3.connect(skyform_home / "state.db").execute(
            "SELECT kind, message FROM events WHERE kind LIKE 'managed.%'"
        )
    ]
    assert (
        "managed.running",
        "the job failed with exit code 3: restart 1 of 1 (max_restarts_on_errors)",
    ) in transitions


def test_no_capacity_anywhere_is_failed_no_resource(
    sky, skyform_home, make_ssh_nodes, tmp_path, shared_ckpt
):
    nodes = make_ssh_nodes(1)
    two_region_pool(skyform_home, nodes, hosts=(0,), give_up_after=3, max_rounds=None)
    _launch_counter(sky, tmp_path, shared_ckpt, "eager_next_region", steps=200)
    nodes.kill_node(0)
    job = wait_for_job(sky, lambda j: j["status"].startswith("FAILED"), timeout=120)
    assert job["status"] == "FAILED_NO_RESOURCE"
    assert "no capacity to relaunch task counter" in job["reason"]
    queue = sky("jobs", "queue", check=0)
    assert "FAILED_NO_RESOURCE" in queue.stdout and "no capacity" in queue.stdout
    assert sky("jobs", "logs", "1", "--follow").exit_code == 4


def test_controller_kill_9_resumes_without_duplicating_work(
    sky, skyform_home, fresh_ssh_nodes, tmp_path, shared_ckpt
):
    two_region_pool(skyform_home, fresh_ssh_nodes)
    task = task_file(
        tmp_path,
        "pipe.yaml",
        f"""\
name: pipe
---
name: first
resources: {{infra: ssh/lab, use_spot: true}}
run: echo once >> {shared_ckpt}/first-runs
---
name: second
resources: {{infra: ssh/lab, use_spot: true}}
run: echo once >> {shared_ckpt}/second-runs; sleep 6
""",
    )
    sky("jobs", "launch", task, "-d", check=0)
    job = wait_for_job(sky, lambda j: j["tasks"][1]["status"] == "RUNNING", timeout=60)
    os.kill(job["controller_pid"], signal.SIGKILL)
    time.sleep(0.5)
    restarted = sky("jobs", "queue", check=0)  # notices the dead controller, starts it again
    assert "had died: started it again" in restarted.stderr
    job = wait_for_job(sky, lambda j: j["status"].startswith(("SUCCEEDED", "FAILED")), timeout=60)
    assert job["status"] == "SUCCEEDED" and job["controller_starts"] == 2
    assert (shared_ckpt / "first-runs").read_text() == "once\n"
    assert (shared_ckpt / "second-runs").read_text() == "once\n"


def test_cancel_during_recovery(sky, skyform_home, make_ssh_nodes, tmp_path, shared_ckpt):
    nodes = make_ssh_nodes(1)
    two_region_pool(skyform_home, nodes, hosts=(0,), give_up_after=60, max_rounds=None)
    _launch_counter(sky, tmp_path, shared_ckpt, "eager_next_region", steps=200)
    nodes.kill_node(0)
    wait_for_job(sky, lambda j: j["status"] == "RECOVERING", timeout=60)
    cancelled = sky("jobs", "cancel", "1", check=0)
    assert "managed job 1: CANCELLED" in cancelled.stdout
    assert managed_job(sky)["status"] == "CANCELLED"
    assert json.loads(sky("status", "--json", check=0).stdout) == []


def test_recovery_keeps_surviving_nodes_and_their_finished_setup(
    sky, skyform_home, make_ssh_nodes, tmp_path
):
    """Two nodes of a three-host zone; one is killed. FAILOVER re-plans onto the same zone, so
    the survivor stays (its setup is not run again) and only the lost node is replaced."""
    nodes = make_ssh_nodes(3)
    hosts = []
    for i in range(3):
        h = nodes.handle(i)
        hosts.append(
            {
                "host": h.host,
                "port": h.port,
                "user": h.user,
                "identity_file": h.identity_file,
                "cpus": 2,
                "memory": 4,
                "labels": {"region": "east", "zone": "east-a", "spot": True},
            }
        )
    (skyform_home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "ssh_pools": {"lab": {"hosts": hosts}},
                "recovery": {"check_interval": 1, "lost_after": 2},
            }
        )
    )
    task = task_file(
        tmp_path,
        "two.yaml",
        """\
name: two
num_nodes: 2
resources: {infra: ssh/lab, use_spot: true}
setup: echo done >> ~/setup-runs
run: echo "rank $SKYFORM_NODE_RANK recovery $SKYFORM_RECOVERY_COUNT"; sleep 8
""",
    )
    sky("jobs", "launch", task, "--recovery", "failover", "-d", check=0)
    wait_for_job(sky, lambda j: j["status"] == "RUNNING")
    used = [i for i in range(3) if (nodes.nodes[i].home / "setup-runs").exists()]
    assert len(used) == 2
    victim, survivor = used[1], used[0]
    nodes.kill_node(victim)
    job = wait_for_job(
        sky, lambda j: j["status"] in ("SUCCEEDED", "FAILED", "FAILED_NO_RESOURCE"), timeout=120
    )
    assert job["status"] == "SUCCEEDED", sky(
        "jobs", "logs", "1", "--no-follow", "--controller", check=0
    ).stdout
    spare = ({0, 1, 2} - set(used)).pop()
    runs = {
        i: (nodes.nodes[i].home / "setup-runs").read_text().count("done") for i in (survivor, spare)
    }
    assert runs == {survivor: 1, spare: 1}  # setup ran once on each node that ran the job
    logs = sky("jobs", "logs", "1", "--no-follow", check=0).stdout
    assert "rank 0 recovery 1" in logs and "rank 1 recovery 1" in logs
    events = [
        m
        for (m,) in sqlite3.connect(skyform_home / "state.db").execute(
            "SELECT message FROM events WHERE kind='cluster.salvaged'"
        )
    ]
    assert events and "replacing the others" in events[0]
