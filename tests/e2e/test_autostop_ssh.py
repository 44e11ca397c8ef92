"""Autostop, stop and start on an ssh pool of real sshd nodes (the agent's check interval
lowered to 2 s through config.yaml; the minutes are real minutes)."""

from __future__ import annotations

import json
import time

import pytest
from autostopkit import Session, last_job_end, set_interval, statuses, wait_gone
from e2ekit import task_file

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def _nothing_left(sky):
    """A failed test leaves no cluster (nor its agent) behind."""
    yield
    sky("down", "-a", "-y")


TASK = """\
resources:
  infra: ssh/lab
  autostop: {{idle_minutes: 1, down: true{extra}}}
run: echo ran
"""


def _launch(sky, tmp_path, name: str, extra: str = "") -> None:
    task = task_file(tmp_path, f"{name}.yaml", TASK.format(extra=extra))
    sky("launch", "-y", task, check=0)


def test_idle_clusters_go_and_a_pty_session_keeps_one_up(sky, pool, skyform_home, tmp_path):
    set_interval(skyform_home, 2)
    # nothing keeps it: gone a minute after its job, once its hook has run
    _launch(sky, tmp_path, "plain", ", hook: 'echo bye > ~/autostop_hook_ran'")
    _launch(sky, tmp_path, "shell")  # jobs_and_ssh (default) + an interactive session
    # the session does not count; a hook that hangs is cut at hook_timeout
    _launch(sky, tmp_path, "jobsonly", ", wait_for: jobs, hook: 'sleep 600', hook_timeout: 3")
    _launch(sky, tmp_path, "cancelled")
    sessions = [Session(skyform_home, name, tmp_path) for name in ("shell", "jobsonly")]
    try:
        for session in sessions:
            session.wait_for_prompt()
        sky("autostop", "cancelled", "--cancel", check=0)
        ended = last_job_end(sky, "plain")
        gone_at = wait_gone(sky, "plain", within=150, refresh=True)
        wait_gone(sky, "jobsonly", within=30, refresh=True)
        time.sleep(10)  # a few more checks of the agents that must not fire
        now = statuses(sky, refresh=True)
        assert now["shell"]["status"] == "UP"  # its PTY under sshd is activity
        assert now["cancelled"]["status"] == "UP"
        assert now["cancelled"]["autostop"] is None
        print(f"autostop delay, last job end -> gone from status: {gone_at - ended:.1f} s")
        assert gone_at - ended < 120
        hooked = [n.home for n in pool.nodes if (n.home / "autostop_hook_ran").exists()]
        assert len(hooked) == 1 and (hooked[0] / "autostop_hook_ran").read_text() == "bye\n"
    finally:
        for session in sessions:
            session.close()
    sky("down", "-y", "shell", "cancelled", check=0)
    # the torn-down clusters gave their hosts back: all four hosts are free again
    two = "num_nodes: 4\nresources:\n  infra: ssh/lab\nrun: echo four\n"
    assert "four" in sky("launch", "-y", task_file(tmp_path, "four.yaml", two), check=0).stdout
    sky("down", "-y", "four", check=0)


SETUP_TASK = """\
name: dev
workdir: .
resources:
  infra: ssh/lab
  autostop: {idle_minutes: 30}
setup: echo setup >> ~/setup_runs
run: echo "setups=$(wc -l < ~/setup_runs) file=$(cat kept.txt)"
"""


def test_stop_then_start_keeps_workdir_and_setup_and_autostop(sky, pool, tmp_path):
    (tmp_path / "kept.txt").write_text("here\n")
    task = task_file(tmp_path, "dev.yaml", SETUP_TASK)
    first = sky("launch", "-y", task, check=0)
    assert "setups=1 file=here" in first.stdout
    sky("exec", "dev", "-d", "sleep", "300", check=0)  # a job stop must end
    stopped = sky("stop", "-y", "dev", check=0)
    refused = sky("exec", "dev", "echo", "no")
    assert refused.exit_code == 1 and "skyform start dev" in refused.output
    assert "killed 1 job process group(s)" in stopped.stdout
    shown = statuses(sky, refresh=False)["dev"]
    assert (shown["status"], shown["autostop"]["stop_after"]) == ("STOPPED", 30)
    assert "30m" in sky("status", check=0).stdout
    queue = sky("queue", "dev", check=0).stdout
    assert "RUNNING" not in queue
    started = sky("start", "dev", check=0)
    assert "autostop 30m restored" in started.stdout
    assert statuses(sky, refresh=False)["dev"]["status"] == "UP"
    again = sky("exec", "dev", task, check=0)  # the same task: setup is not run again
    assert "setups=1 file=here" in again.stdout
    report = sky("ssh", "dev", "--", "cat", "~/.skyform_node/autostop/setting", check=0)
    assert report.stdout.split()[:3] == ["dev", "30", "-"]  # the agent has it again
    # cost-report: the stopped stretch is no interval (no compute while it was stopped)
    (dev,) = [c for c in json.loads(sky("cost-report", "--json", check=0).stdout)["clusters"]]
    first, second = dev["intervals"]
    assert first["ended_at"] is not None and second["reason"] == "start"
    assert second["started_at"] > first["ended_at"]
    sky("down", "-y", "dev", check=0)


def test_stop_refuses_local_and_autostop_needs_up(sky, tmp_path):
    task = task_file(tmp_path, "l.yaml", "resources:\n  infra: local\nrun: echo hi\n")
    sky("launch", "-y", task, check=0)
    refused = sky("stop", "-y", "l")
    assert refused.exit_code == 1
    assert "cannot be stopped" in refused.output and "skyform down l" in refused.output
    refused = sky("autostop", "l", "-i", "5")
    assert refused.exit_code == 1 and "--down" in refused.output
    sky("autostop", "l", "-i", "5", "--down", check=0)
    assert "5m (down)" in sky("status", check=0).stdout
    sky("down", "-y", "l", check=0)
