"""Nothing gets stuck: Ctrl-C (a real SIGINT to a real `skyform` process group) and `kill -9`
during setup, Ctrl-C while streaming, `exec` on a dead node — every job ends with a status
and a reason, streaming says how to re-attach, and the next apply carries on where the last
one stopped instead of rebuilding the cluster."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from e2ekit import task_file, write_pool

pytestmark = pytest.mark.e2e


class Live:
    """`skyform ARGS` running in its own process group (as in a terminal), read line by line."""

    def __init__(self, home: Path, cwd: Path, *args: str) -> None:
        env = dict(os.environ, SKYFORM_HOME=str(home), COLUMNS="200", NO_COLOR="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "skyform.cli.main", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            line = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            assert line is not None, f"{text!r} never came: {''.join(self.lines)}"
            self.lines.append(line)

    def signal(self, sig: int) -> tuple[int, str]:
        """Signal the whole process group (what Ctrl-C in a terminal does); exit code, output."""
        os.killpg(self.proc.pid, sig)
        code = self.proc.wait(timeout=60)
        while (line := self._queue.get(timeout=10)) is not None:
            self.lines.append(line)
        return code, "".join(self.lines)


def _jobs(sky, cluster: str) -> dict[int, dict]:
    return {j["job_id"]: j for j in json.loads(sky("queue", cluster, "--json").stdout)}


def _running(pattern: str) -> list[str]:
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if pattern in cmdline:
            found.append(cmdline)
    return found


SLOW_SETUP = """\
name: slow
resources: {infra: local}
setup: |
  echo setup begins on $SKYFORM_NODE_RANK
  echo first > ~/made-by-the-first-apply
  sleep 31.7
run: echo ran
"""


def test_ctrl_c_during_setup_cancels_the_job_and_the_next_apply_carries_on(
    sky, skyform_home, tmp_path
):
    task = task_file(tmp_path, "slow.yaml", SLOW_SETUP)
    live = Live(skyform_home, tmp_path, "apply", str(task), "-y")
    live.wait_for("(slow, node=0, setup) setup begins on 0")  # setup output is streamed
    code, output = live.signal(signal.SIGINT)
    assert code == 130
    assert "Interrupted: setup was stopped on the nodes; job 1 on slow is CANCELLED." in output
    assert "`skyform apply` again carries on from here" in output
    assert "Traceback" not in output and "Error:" not in output
    assert not _running("sleep 31.7")  # stopped on the node, not left behind
    job = _jobs(sky, "slow")[1]
    assert job["status"] == "CANCELLED"
    assert job["reason"] == "interrupted (Ctrl-C) during setup"
    assert json.loads(sky("status", "--json").stdout)[0]["status"] == "INIT"

    task.write_text(SLOW_SETUP.replace("sleep 31.7", "echo setup ends"))
    plan = sky("plan", task, check=0)
    assert "did not finish" in plan.stdout and "Plan: 0 to add, 1 to change" in plan.stdout
    again = sky("apply", task, "-y", check=0)
    assert "(slow, node=0, setup) setup ends" in again.stdout
    assert "(slow, node=0) ran" in again.stdout
    node = skyform_home / "local" / "slow" / "node-0"
    assert (node / "made-by-the-first-apply").exists()  # the same node: not rebuilt
    assert _jobs(sky, "slow")[2]["status"] == "SUCCEEDED"
    first = sky("logs", "slow", "1", check=0)
    assert "(slow, node=0, setup) setup begins on 0" in first.stdout  # kept: its own output
    assert "job 1 on slow never ran (CANCELLED: interrupted (Ctrl-C) during setup)" in (
        first.stderr
    )
    sky("down", "-y", "slow", check=0)


def test_kill_9_during_setup_is_cancelled_and_the_setup_is_waited_for_not_rerun(
    sky, skyform_home, tmp_path
):
    task = task_file(
        tmp_path,
        "k9.yaml",
        "name: k9\nresources: {infra: local}\n"
        "setup: |\n  echo run >> ~/setup-runs\n  sleep 8\n  echo setup ends\nrun: echo ran\n",
    )
    live = Live(skyform_home, tmp_path, "apply", str(task), "-y")
    live.wait_for("setup started")
    code, _ = live.signal(signal.SIGKILL)
    assert code == -signal.SIGKILL
    job = _jobs(sky, "k9")[1]  # no command owns the cluster now: never SETTING_UP forever
    assert job["status"] == "CANCELLED", job
    assert "stopped before the job ran" in job["reason"]
    again = sky("apply", task, "-y", check=0)
    assert "setup already running (started earlier); waiting for it" in again.stdout
    assert "(k9, node=0, setup) setup ends" in again.stdout
    assert "(k9, node=0) ran" in again.stdout
    node = skyform_home / "local" / "k9" / "node-0"
    assert (node / "setup-runs").read_text() == "run\n"  # resumed, not run a second time
    assert "(k9, node=0, setup) setup ends" in sky("logs", "k9", "2", check=0).stdout
    sky("down", "-y", "k9", check=0)


TICKS = """\
name: ticks
resources: {infra: local}
run: |
  for i in $(seq 1 40); do echo "tick $i"; sleep 0.25; done
"""


@pytest.mark.parametrize("verb", ["apply", "exec", "logs"])
def test_ctrl_c_while_streaming_leaves_the_job_running_and_says_how_to_reattach(
    sky, skyform_home, tmp_path, verb
):
    task = task_file(tmp_path, "ticks.yaml", TICKS)
    if verb == "apply":
        live = Live(skyform_home, tmp_path, "apply", str(task), "-y")
        job_id = 1
    else:
        sky("apply", task, "-y", "--detach", check=0)
        if verb == "exec":
            live = Live(skyform_home, tmp_path, "exec", "ticks", str(task))
            job_id = 2
        else:
            live = Live(skyform_home, tmp_path, "logs", "ticks", "1", "--follow")
            job_id = 1
    live.wait_for("tick 2")
    code, output = live.signal(signal.SIGINT)
    assert code == 130
    assert f"Stopped following: job {job_id} on ticks keeps running." in output
    assert f"Re-attach: skyform logs ticks {job_id} --follow" in output
    assert "Traceback" not in output
    assert _jobs(sky, "ticks")[job_id]["status"] == "RUNNING"
    rest = sky("logs", "ticks", str(job_id), "--follow", check=0)
    assert "tick 40" in rest.stdout
    assert _jobs(sky, "ticks")[job_id]["status"] == "SUCCEEDED"
    sky("down", "-y", "ticks", check=0)


def test_exec_on_a_dead_node_fails_the_job_with_the_reason(
    sky, skyform_home, make_ssh_nodes, tmp_path
):
    nodes = make_ssh_nodes(1)
    write_pool(skyform_home, nodes, [0])
    task = task_file(tmp_path, "job.yaml", "name: job\nresources: {infra: ssh/lab}\nrun: echo ok\n")
    sky("apply", task, "-y", check=0)
    nodes.kill_node(0)
    failed = sky("exec", "job", "echo hi")
    assert failed.exit_code == 1 and "Traceback" not in failed.output
    job = _jobs(sky, "job")[2]
    assert job["status"] == "FAILED"
    assert job["reason"].startswith("could not start: ") and "node 0" in job["reason"]
    assert f"job 2: {job['reason']}" in sky("queue", "job", check=0).stdout
    logs = sky("logs", "job")
    assert logs.exit_code == 0
    assert "job 2 on job never ran (FAILED: could not start: " in logs.stderr
    assert "the latest job that ran is 1: skyform logs job 1" in logs.stderr
    sky("down", "-y", "job", check=0)
