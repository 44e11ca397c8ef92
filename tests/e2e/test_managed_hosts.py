"""Managed jobs on ssh-pool hosts that are preempted and come back: injected preemptions,
patience while capacity is gone, what a reused host holds, and who may read a checkpoint."""

from __future__ import annotations

import time

import pytest
from e2ekit import job_ended, task_file, two_region_pool, wait_for_job

pytestmark = pytest.mark.e2e

TICKS = """\
name: ticks
resources: {{infra: ssh/lab, use_spot: true}}
run: |
  echo "attempt $SKYFORM_RECOVERY_COUNT"
  for i in $(seq 1 {n}); do echo "tick $i"; sleep 0.5; done
"""


def _launch_running(sky, tmp_path, text: str) -> dict:
    sky("jobs", "launch", task_file(tmp_path, "task.yaml", text), "-d", check=0)
    return wait_for_job(sky, lambda j: j["status"] == "RUNNING", timeout=60)


def test_debug_preempt_on_ssh_is_a_preemption_not_a_user_failure(
    sky, skyform_home, fresh_ssh_nodes, tmp_path
):
    two_region_pool(skyform_home, fresh_ssh_nodes)
    _launch_running(sky, tmp_path, TICKS.format(n=12))  # max_restarts_on_errors: 0
    sky("debug", "preempt", "j1-ticks", check=0)
    job = wait_for_job(sky, job_ended, timeout=120)
    assert (job["status"], job["tasks"][0]["restarts"]) == ("SUCCEEDED", 0)
    assert job.get("recoveries") == 1


def test_capacity_that_comes_back_after_a_while_is_waited_for(
    sky, skyform_home, make_ssh_nodes, tmp_path
):
    """The only host is reclaimed and answers again 10 s later: the job waits for it
    (it used to give up after 3 rounds in 7.4 s)."""
    nodes = make_ssh_nodes(1)
    two_region_pool(skyform_home, nodes, hosts=(0,), give_up_after=120, max_rounds=None)
    _launch_running(sky, tmp_path, TICKS.format(n=6))
    nodes.kill_node(0)
    wait_for_job(sky, lambda j: j["status"] == "RECOVERING", timeout=30)
    time.sleep(10)
    nodes.start_node(0)
    job = wait_for_job(sky, job_ended, timeout=120)
    assert (job["status"], job.get("recoveries")) == ("SUCCEEDED", 1)


def test_a_host_reused_after_a_preemption_starts_clean(sky, skyform_home, make_ssh_nodes, tmp_path):
    """The reclaimed host comes back with the files of the attempt it ran (teardown could not
    reach it); the next cluster on it must see only its own workdir and job."""
    nodes = make_ssh_nodes(1)
    two_region_pool(skyform_home, nodes, hosts=(0,), max_rounds=30)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "input.txt").write_text("data\n")
    _launch_running(
        sky,
        tmp_path,
        """\
name: clean
workdir: work
resources: {infra: ssh/lab, use_spot: true}
run: |
  echo "workdir: $(ls -A | paste -sd ' ' -)"
  echo "jobs: $(ls -A ~/.skyform_node/jobs | wc -l)"
  touch "made-by-attempt-$SKYFORM_RECOVERY_COUNT"
  sleep 4
""",
    )
    time.sleep(1)
    nodes.kill_node(0)
    wait_for_job(sky, lambda j: j["status"] == "RECOVERING", timeout=30)
    nodes.start_node(0)
    assert wait_for_job(sky, job_ended, timeout=120)["status"] == "SUCCEEDED"
    lines = sky("jobs", "logs", "1", "--no-follow", check=0).stdout.splitlines()
    last = {kind: [x for x in lines if f"{kind}:" in x][-1] for kind in ("workdir", "jobs")}
    assert last == {
        "workdir": "(clean, node=0) workdir: input.txt",
        "jobs": "(clean, node=0) jobs: 1",
    }


def test_a_recovered_job_reads_the_checkpoint_another_node_user_wrote(
    sky, skyform_home, make_ssh_nodes, tmp_path, shared_ckpt
):
    """Nodes are different Unix users sharing the checkpoint directory (as NFS does): the
    job's files are readable by others (umask 022), skyform's own stay private."""
    nodes = make_ssh_nodes(4)  # this test kills one: never the session's shared nodes
    two_region_pool(skyform_home, nodes)
    _launch_running(
        sky,
        tmp_path,
        f"""\
name: resume
resources: {{infra: ssh/lab, use_spot: true}}
run: |
  jobdir=$(dirname "$0")
  echo "modes: $(stat -c %a "$jobdir" "$jobdir/log" | paste -sd ' ' -)"
  start=$(cat {shared_ckpt}/n 2>/dev/null || echo 0)
  echo "resumed at $start"
  for i in $(seq "$start" 14); do
    echo "$i" > {shared_ckpt}/n.$$ && mv {shared_ckpt}/n.$$ {shared_ckpt}/n; sleep 0.5
  done
""",
    )
    deadline = time.monotonic() + 30
    while not (shared_ckpt / "n").exists() or int((shared_ckpt / "n").read_text()) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    nodes.kill_node(next(i for i in (0, 1) if nodes.user_pids(i)))
    assert wait_for_job(sky, job_ended, timeout=120)["status"] == "SUCCEEDED"
    logs = sky("jobs", "logs", "1", "--no-follow", check=0).stdout
    resumed = int(logs.rsplit("resumed at ", 1)[1].split()[0])
    assert resumed >= 3  # read what the other node's user wrote, not started from 0
    assert "(resume, node=0) modes: 700 600\n" in logs
