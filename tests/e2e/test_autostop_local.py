"""Autostop on `local` with the agent's real 60 s check (SkyPilot's interval), as a user
gets it without any config: a cluster with `autostop: {idle_minutes: 1, down: true}` is gone
from `skyform status` one minute after its last job ends (the agent wakes when the limit falls
due, not at its next 60 s check)."""

from __future__ import annotations

import json
import time

import pytest
from autostopkit import last_job_end, statuses, wait_gone
from e2ekit import task_file

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def _nothing_left(sky):
    """A failed test leaves no cluster (nor its agent) behind."""
    yield
    sky("down", "-a", "-y")


TASK = """\
resources:
  infra: local
  autostop: {idle_minutes: 1, down: true}
run: echo ran
"""


def test_autodown_with_the_real_60_s_check(sky, skyform_home, tmp_path):
    sky("launch", "-y", task_file(tmp_path, "idle.yaml", TASK), check=0)
    assert statuses(sky, refresh=False)["idle"]["autostop"]["down_after"] == 1
    ended = last_job_end(sky, "idle")
    gone_at = wait_gone(sky, "idle", within=130, refresh=False, poll=5)
    print(f"autostop delay (60 s checks), last job end -> gone: {gone_at - ended:.1f} s")
    assert 59 < gone_at - ended < 90  # N minutes, then the teardown and one 5 s status poll
    assert not (skyform_home / "local" / "idle").exists()  # the node directory went too


def test_a_new_job_restarts_the_countdown(sky, skyform_home, tmp_path):
    (skyform_home / "config.yaml").write_text("autostop: {check_interval: 2}\n")
    task = task_file(tmp_path, "busy.yaml", TASK.replace("echo ran", "sleep 75"))
    sky("launch", "-y", "-d", task, check=0)
    # the job runs longer than the idle minute: the agent must wait for it
    ended = None
    for _ in range(60):
        jobs = json.loads(sky("queue", "busy", "--json", check=0).stdout)
        if jobs[-1]["status"] == "SUCCEEDED":
            ended = last_job_end(sky, "busy")
            break
        assert "busy" in statuses(sky, refresh=False)  # running past its idle minute
        time.sleep(3)
    assert ended is not None
    gone_at = wait_gone(sky, "busy", within=100, refresh=False)
    assert 55 < gone_at - ended < 100


def test_a_local_shell_on_the_node_keeps_it_up_until_it_exits(sky, skyform_home, tmp_path):
    """`skyform ssh` on a local node is a local shell on a terminal, HOME = the node's
    directory: under jobs_and_ssh that is activity, as an SSH login is on a remote node."""
    from autostopkit import Session

    (skyform_home / "config.yaml").write_text("autostop: {check_interval: 2}\n")
    sky("launch", "-y", task_file(tmp_path, "desk.yaml", TASK), check=0)
    session = Session(skyform_home, "desk", tmp_path)
    try:
        session.wait_for_prompt()
        ended = last_job_end(sky, "desk")
        time.sleep(max(0.0, ended + 75 - time.time()))  # past its idle minute
        assert statuses(sky, refresh=False)["desk"]["status"] == "UP"
    finally:
        session.close()
    closed = time.time()
    gone_at = wait_gone(sky, "desk", within=90, refresh=False)
    assert 55 < gone_at - closed < 90  # the minute counts from the shell's end


def test_a_changed_setting_is_applied_in_place(sky, skyform_home, tmp_path):
    task = task_file(tmp_path, "dev.yaml", TASK.replace("idle_minutes: 1", "idle_minutes: 30"))
    sky("apply", "-y", task, check=0)
    setting = skyform_home / "local" / "dev" / "node-0" / ".skyform_node" / "autostop" / "setting"
    assert setting.read_text().split()[:3] == ["dev", "-", "30"]
    task.write_text(TASK.replace("idle_minutes: 1", "idle_minutes: 45"))
    shown = sky("plan", task, check=0).stdout
    assert '~ autostop = "30m (down)" -> "45m (down)"' in shown
    assert "Plan: 0 to add, 1 to change, 0 to destroy." in shown
    applied = sky("apply", "-y", task, check=0).stdout
    assert "node=0) ran" not in applied  # the job is unchanged: not run again
    assert setting.read_text().split()[:3] == ["dev", "-", "45"]
    assert "45m (down)" in sky("status", check=0).stdout
    task.write_text(TASK.replace("  autostop: {idle_minutes: 1, down: true}\n", ""))
    sky("apply", "-y", task, check=0)
    assert not setting.exists()  # cancelled on the node
    assert statuses(sky, refresh=False)["dev"]["autostop"] is None
    sky("down", "-y", "dev", check=0)


def test_a_managed_jobs_cluster_is_never_armed(sky, tmp_path):
    """Its controller decides when the cluster goes: no agent may take it down under it."""
    task = TASK.replace(
        "echo ran", "test -e ~/.skyform_node/autostop/setting && echo ARMED || echo NOT-ARMED"
    )
    launched = sky("jobs", "launch", "-y", task_file(tmp_path, "managed.yaml", task), check=0)
    assert "node=0) NOT-ARMED" in launched.stdout and "node=0) ARMED" not in launched.stdout
