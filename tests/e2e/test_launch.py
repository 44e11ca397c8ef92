"""`skyform launch` as a SkyPilot user runs `sky launch`, on `local`: the job runs on every
call (on the existing cluster when nothing else changed) while `apply` keeps Terraform's "no
changes, nothing runs"; exit codes are SkyPilot's JobExitCode."""

from __future__ import annotations

import json
import time

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e

COUNTING = """\
name: counting
resources: {infra: local}
setup: echo set-up >> ~/setups.txt
run: echo "run $GREETING $(wc -l < ~/setups.txt)"
envs: {GREETING: hi}
"""


def _status(sky) -> list[dict]:
    return json.loads(sky("status", "--json", check=0).stdout)


def _jobs(sky, cluster: str) -> list[dict]:
    return json.loads(sky("queue", cluster, "--json", check=0).stdout)


def test_launch_runs_the_job_again_on_the_same_cluster_and_apply_does_not(sky, tmp_path):
    task = task_file(tmp_path, "counting.yaml", COUNTING)
    first = sky("launch", task, "-y", check=0)
    assert "Plan: 1 to add" in first.stdout and "run hi 1" in first.stdout
    (cluster,) = _status(sky)
    again = sky("launch", task, "-y", check=0)
    assert "No changes." in again.stdout
    assert "counting running the job again" in again.stdout
    assert "run hi 1" in again.stdout  # setup did not run again: it is done on this cluster
    assert "provisioning" not in again.stdout
    assert _status(sky)[0]["launched_at"] == cluster["launched_at"]  # not re-provisioned
    assert [j["job_id"] for j in _jobs(sky, "counting")] == [1, 2]

    applied = sky("apply", task, "-y", check=0)
    assert "No changes." in applied.stdout and "running the job" not in applied.stdout
    assert len(_jobs(sky, "counting")) == 2  # Terraform's meaning: nothing to do, nothing ran

    changed = sky("launch", task, "-y", "--env", "GREETING=hello", check=0)
    assert "will be updated in-place" in changed.stdout
    assert "run hello 2" in changed.stdout  # envs reach setup too: it ran again
    assert len(_jobs(sky, "counting")) == 3


def test_launch_exit_codes_are_skypilots(sky, tmp_path):
    failing = task_file(tmp_path, "f.yaml", "name: f\nresources: {infra: local}\nrun: exit 3\n")
    failed = sky("launch", failing, "-y")
    assert failed.exit_code == 100  # JobExitCode.FAILED, whatever the job's own code
    assert sky("launch", failing, "-y").exit_code == 100  # and again on the existing cluster
    bad_setup = task_file(
        tmp_path, "s.yaml", "name: s\nresources: {infra: local}\nsetup: exit 1\nrun: echo\n"
    )
    assert sky("launch", bad_setup, "-y").exit_code == 100


def test_launch_detach_returns_once_the_job_is_submitted(sky, tmp_path):
    slow = task_file(tmp_path, "slow.yaml", "name: slow\nresources: {infra: local}\nrun: sleep 8\n")
    started = time.monotonic()
    result = sky("launch", slow, "-y", "-d", check=0)
    assert time.monotonic() - started < 8
    assert "follow it: skyform logs slow 1 --follow" in result.stdout
    assert _jobs(sky, "slow")[0]["status"] == "RUNNING"
    sky("cancel", "slow", "1", check=0)


def test_launch_dryrun_and_launch_without_yes_change_nothing(sky, tmp_path):
    task = task_file(tmp_path, "counting.yaml", COUNTING)
    dry = sky("launch", task, "--dryrun", check=0)
    assert "Plan: 1 to add" in dry.stdout
    refused = sky("launch", task)  # stdin is not a terminal here
    assert refused.exit_code == 1
    assert "needs confirmation" in refused.stderr and "Pass -y" in refused.stderr
    assert _status(sky) == []


def test_launch_takes_cluster_env_env_file_secret_and_resource_flags(sky, tmp_path):
    task = task_file(
        tmp_path,
        "vars.yaml",
        "name: vars\nresources: {infra: local}\nenvs: {A: a, B: b}\nsecrets: {TOKEN: null}\n"
        'run: echo "A=$A B=$B token=${#TOKEN} nodes=$SKYFORM_NUM_NODES"\n',
    )
    (tmp_path / "vars.env").write_text("B=from-file\n")
    flags = ["-c", "mine", "--env", "A=flag", "--env-file", "vars.env"]
    flags += ["--secret", "TOKEN=s3cr3t-xyz", "--num-nodes", "2", "--cpus", "1+"]
    result = sky("launch", task, "-y", *flags)
    assert result.exit_code == 0, result.output
    assert "Planned with resource flags: --cpus 1+ --num-nodes 2" in result.stdout
    assert "A=flag B=from-file token=10 nodes=2" in result.stdout
    assert "s3cr3t-xyz" not in result.output
    assert [c["name"] for c in _status(sky)] == ["mine"]
    rerun = sky("launch", task, "-y", *flags, check=0)
    assert "mine running the job again" in rerun.stdout  # the same flags: the same plan


TICKS = """\
name: ticks
resources: {infra: local}
run: for i in $(seq 1 40); do echo "tick $i"; sleep 0.25; done
"""


def test_jobs_launch_name_yes_and_flags_survive_recovery(sky, skyform_home, tmp_path):
    """`jobs launch -y -n NAME` with resource flags: the job is named, its first plan
    revision records the flags, and the recovery after a preemption plans with them too."""
    from e2ekit import job_ended, wait_for_job

    (skyform_home / "config.yaml").write_text(
        "recovery: {check_interval: 0.5, lost_after: 2, max_rounds: 5}\n"
    )
    task = task_file(tmp_path, "ticks.yaml", TICKS)
    sky("jobs", "launch", task, "-y", "-d", "-n", "nightly", "--cpus", "1+", check=0)
    wait_for_job(sky, lambda j: j["status"] == "RUNNING")
    sky("debug", "preempt", "j1-ticks", check=0)
    job = wait_for_job(sky, job_ended, timeout=120)
    assert (job["name"], job["status"]) == ("nightly", "SUCCEEDED")
    revisions = json.loads(sky("jobs", "plans", "1", "--json", check=0).stdout)
    assert len(revisions) == 2
    for rev in (1, 2):
        plan = json.loads(sky("jobs", "plans", "1", "--show", str(rev), "--json", check=0).stdout)
        assert plan["task"]["overrides"] == {"cpus": "1+"}
    assert sky("jobs", "cancel", "1", "-y", check=0).stdout.strip() == "managed job 1: SUCCEEDED"


def test_jobs_launch_of_a_plan_made_with_flags_keeps_them(sky, tmp_path):
    task = task_file(tmp_path, "counting.yaml", COUNTING)
    sky("plan", task, "--cpus", "1+", "--num-nodes", "2", "-o", "p.json", check=0)
    sky("jobs", "launch", "p.json", "-y", check=0)  # the reviewed placement, launched as is
    plan = json.loads(sky("jobs", "plans", "1", "--show", "1", "--json", check=0).stdout)
    assert plan["task"]["overrides"] == {"cpus": "1+", "num-nodes": "2"}
    assert plan["tasks"][0]["num_nodes"] == 2


def test_a_setup_only_task_launches_a_dev_cluster_to_ssh_into(sky, tmp_path):
    """`sky launch -c dev dev.yaml` with no `run:`: the cluster comes up, set up, no job to
    run; then `ssh dev`."""
    dev = task_file(
        tmp_path, "dev.yaml", "name: dev\nresources: {infra: local}\nsetup: touch ~/ready\n"
    )
    launched = sky("launch", dev, "-y", check=0)
    assert "dev: job 1 SUCCEEDED" in launched.stdout
    assert [c["status"] for c in _status(sky)] == ["UP"]
    assert sky("ssh", "dev", "--", "test", "-f", "ready").exit_code == 0
