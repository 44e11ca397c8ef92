"""Managed jobs on the embedded `local` infra, as a user drives them from the CLI: what
`jobs logs` shows after the fact, Ctrl-C while following, `down` of a job's cluster, a cluster
taken away behind the job's back, #RECOVERIES, and a saved plan launched with --env."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from e2ekit import job_ended, managed_job, task_file, wait_for_job

from skyform.spec.inputs import TaskInputs

pytestmark = pytest.mark.e2e

TICKS = """\
name: ticks
resources: {{infra: local}}
run: |
  echo "attempt $SKYFORM_RECOVERY_COUNT"
  for i in $(seq 1 {n}); do echo "tick $i"; sleep 0.2; done
"""
SUCCEEDED = "── managed job 1: SUCCEEDED (every task succeeded)"


@pytest.fixture(autouse=True)
def fast_recovery(skyform_home):
    settings = {"check_interval": 0.5, "lost_after": 2, "max_rounds": 5}
    (skyform_home / "config.yaml").write_text(yaml.safe_dump({"recovery": settings}))


def _ticks(tmp_path, n: int):
    return task_file(tmp_path, "ticks.yaml", TICKS.format(n=n))


def _launch_running(sky, tmp_path, n: int = 300) -> dict:
    sky("jobs", "launch", _ticks(tmp_path, n), "-d", check=0)
    return wait_for_job(sky, lambda j: j["status"] == "RUNNING")


def _ticks_printed(text: str) -> list[str]:
    return [line for line in text.splitlines() if " tick " in line]


def test_logs_of_a_cancelled_job_keep_what_it_printed(sky, tmp_path):
    _launch_running(sky, tmp_path)
    time.sleep(2)
    sky("jobs", "cancel", "1", check=0)
    logs = sky("jobs", "logs", "1", "--no-follow", check=0).stdout
    assert _ticks_printed(logs)[:3] == [f"(ticks, node=0) tick {i}" for i in (1, 2, 3)]
    assert logs.strip().splitlines()[-1] == "── managed job 1: CANCELLED (cancelled by the user)"


def test_final_status_is_the_last_line_of_launch_and_of_logs(sky, tmp_path):
    launched = sky("jobs", "launch", _ticks(tmp_path, 5), check=0)  # follows to the end
    expected = [f"(ticks, node=0) tick {i}" for i in range(1, 6)]
    for result in (
        launched,
        sky("jobs", "logs", "1", "--no-follow"),
        sky("jobs", "logs", "1", "--follow"),
    ):
        lines = result.stdout.strip().splitlines()
        assert (result.exit_code, lines[-1]) == (0, SUCCEEDED)
        assert _ticks_printed(result.stdout) == expected


def test_local_preemption_keeps_the_output_from_before_it(sky, tmp_path):
    _launch_running(sky, tmp_path, n=25)
    time.sleep(1.5)
    sky("debug", "preempt", "j1-ticks", check=0)
    assert wait_for_job(sky, job_ended)["status"] == "SUCCEEDED"
    logs = sky("jobs", "logs", "1", "--no-follow", check=0).stdout
    attempts = [line for line in logs.splitlines() if "attempt " in line and "node=0" in line]
    assert attempts == ["(ticks, node=0) attempt 0", "(ticks, node=0) attempt 1"]
    before, after = logs.split("(ticks, node=0) attempt 1")
    assert "(ticks, node=0) tick 3" in before  # printed before the node was taken
    assert after.strip().splitlines()[-1] == SUCCEEDED


def test_ctrl_c_while_following_leaves_the_job_running(sky, skyform_home, tmp_path):
    env = dict(os.environ, SKYFORM_HOME=str(skyform_home), COLUMNS="200", NO_COLOR="1")
    follower = subprocess.Popen(
        [sys.executable, "-m", "skyform.cli.main", "jobs", "launch", _ticks(tmp_path, 300)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    wait_for_job(sky, lambda j: j["status"] == "RUNNING")
    time.sleep(1)
    follower.send_signal(signal.SIGINT)
    out, err = follower.communicate(timeout=30)
    assert follower.returncode == 130
    assert "Stopped following managed job 1; the job keeps running" in err
    assert "re-attach: skyform jobs logs 1 · cancel it" in err
    assert "tick 1" in out
    assert managed_job(sky)["status"] == "RUNNING"
    sky("jobs", "cancel", "1", check=0)


def test_down_refuses_the_cluster_of_a_running_managed_job(sky, tmp_path):
    _launch_running(sky, tmp_path)
    refused = sky("down", "-y", "j1-ticks")
    assert refused.exit_code == 1
    assert "cluster 'j1-ticks' runs managed job 1 (ticks, RUNNING)" in refused.stderr
    assert "skyform jobs cancel 1" in refused.stderr
    assert [c["name"] for c in json.loads(sky("status", "--json", check=0).stdout)] == ["j1-ticks"]
    assert managed_job(sky)["status"] == "RUNNING"
    sky("jobs", "cancel", "1", check=0)
    assert json.loads(sky("status", "--json", check=0).stdout) == []


def test_cluster_torn_down_behind_the_jobs_back_is_recovered(sky, tmp_path):
    """Something else tears the cluster down the way every skyform command does (under the
    cluster's lock), e.g. an older skyform's `down`: the controller treats it as lost
    capacity, never as a user failure or a crash."""
    from skyform.config import load_config
    from skyform.lifecycle import clusters
    from skyform.state.db import open_state
    from skyform.state.lock import cluster_lock

    _launch_running(sky, tmp_path, n=15)
    db = open_state()
    try:
        with cluster_lock("j1-ticks", purpose="skyform down j1-ticks"):
            record = db.require_cluster("j1-ticks")
            clusters.destroy(db, load_config(), record, reason="down", emit=lambda _m: None)
    finally:
        db.close()
    job = wait_for_job(sky, job_ended)
    assert (job["status"], job.get("recoveries")) == ("SUCCEEDED", 1)
    assert (
        "torn down outside the managed job"
        in sky("jobs", "logs", "1", "--no-follow", "--controller", check=0).stdout
    )


def test_recoveries_mean_the_same_in_queue_and_cost_report(sky, tmp_path):
    """A restart after a user failure is a recovery, as SkyPilot counts it."""
    task = task_file(
        tmp_path,
        "flaky.yaml",
        """\
name: flaky
resources: {infra: local, job_recovery: {max_restarts_on_errors: 1}}
run: test "$SKYFORM_RECOVERY_COUNT" != 0 || exit 3
""",
    )
    assert sky("jobs", "launch", task).exit_code == 0
    header, _, row = sky("jobs", "queue", check=0).stdout.splitlines()[:3]
    column = header.index("#RECOVERIES")
    assert row[column : column + len("#RECOVERIES")].strip() == "1"
    (job,) = json.loads(sky("cost-report", "--json", check=0).stdout)["managed_jobs"]
    assert job["recoveries"] == 1
    assert managed_job(sky).get("recoveries") == 1


def test_jobs_launch_of_a_saved_plan_refuses_env(sky, tmp_path):
    sky("plan", _ticks(tmp_path, 3), "-o", "ticks.plan.json", check=0)
    for flags in (["--env", "X=1"], ["--env-file", str(task_file(tmp_path, "e.env", "X=1\n"))]):
        refused = sky("jobs", "launch", "ticks.plan.json", *flags, "-d")
        assert refused.exit_code == 1
        assert "--env and --env-file belong to the plan" in refused.stderr
    assert json.loads(sky("jobs", "queue", "--json", check=0).stdout) == []


def test_a_revision_goes_stale_only_when_someone_else_changes_its_cluster(tmp_path):
    """The per-revision rule: the job's own teardown (a recovery's) leaves its revision fresh;
    a `down` of that cluster by another command makes it stale."""
    from skyform.config import load_config
    from skyform.errors import StalePlanError
    from skyform.lifecycle import clusters
    from skyform.ops.managed import attempt
    from skyform.ops.managed.launch import launch
    from skyform.state.db import open_state

    config, quiet = load_config(), lambda _m: None
    with open_state() as ours, open_state() as other:
        ours.acting_for = attempt.acting_for(1)  # as the controller records its changes
        record = launch(
            ours,
            _ticks(tmp_path, 1),
            inputs=TaskInputs(),
            strategy=None,
            max_restarts=None,
            start=False,
        )
        task = record.tasks[0]
        made = attempt.provision(ours, config, record, task, quiet)
        clusters.destroy(ours, config, made, reason="recovery teardown", emit=quiet)
        made = attempt.provision(ours, config, record, task, quiet)  # still fresh
        clusters.destroy(other, config, made, reason="down", emit=quiet)
        with pytest.raises(StalePlanError, match=r"cluster j1-ticks was changed by .* after"):
            attempt.provision(ours, config, record, task, quiet)
    assert json_clusters() == []


def json_clusters() -> list[str]:
    from skyform.state.db import open_state

    with open_state() as db:
        return [c.name for c in db.list_clusters()]


def _controller_of_job_1(sky) -> str | None:
    (job,) = json.loads(sky("jobs", "queue", "--json", check=0).stdout)
    return job["controller"]


def test_queue_names_the_local_controller_from_the_moment_launch_returns(sky, tmp_path):
    """`jobs launch` returns once the controller it started drives the job, so the next
    `jobs queue` names it (CONTROLLER user@host:pid, never `-` while it starts); a queue
    that starts a dead controller again names the new one."""
    sky("jobs", "launch", _ticks(tmp_path, 300), "-d", check=0)
    first = _controller_of_job_1(sky)
    assert first is not None
    pid = int(first.rsplit(":", 1)[1])
    os.kill(pid, 0)  # the controller, alive
    table = sky("jobs", "queue", check=0).stdout
    assert table.splitlines()[2].split()[-1] == first
    os.kill(pid, signal.SIGKILL)
    for _ in range(100):  # until the killed process is reaped (it is no child of ours)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    restarted = sky("jobs", "queue", check=0)
    assert "started it again" in restarted.stderr
    again = restarted.stdout.splitlines()[2].split()[-1]
    assert again not in ("-", first)
    sky("jobs", "cancel", "1", check=0)
