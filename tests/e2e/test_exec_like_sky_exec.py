"""`exec` and `logs` as a SkyPilot user types them (issue 28, "Verbs"): options before the
command are skyform's and an unknown one runs nothing; the job starts in the workdir; it runs
on the nodes it asks for (the head alone by default, as `sky exec`); `logs` follows by
default, with `--no-follow`, `--tail N` and `--node N`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2ekit import task_file, write_pool

pytestmark = pytest.mark.e2e


def _two_nodes(tmp_path: Path, infra: str = "local", run: str = "echo launched") -> Path:
    (tmp_path / "code").mkdir(exist_ok=True)
    (tmp_path / "code" / "data.txt").write_text("from the workdir\n")
    return task_file(
        tmp_path, "c.yaml", f"name: c\nnum_nodes: 2\nresources: {{infra: {infra}}}\n"
        f"workdir: ./code\nrun: {run}\n",
    )  # fmt: skip


def _jobs(sky, cluster: str = "c") -> list[dict]:
    return json.loads(sky("queue", cluster, "--json", check=0).stdout)


def _node_lines(text: str, cluster: str = "c") -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith(f"({cluster}, node=")]


@pytest.mark.parametrize(
    ("words", "unknown"),
    [
        (["--no-follow", "cat data.txt"], "--no-follow"),
        (["--bogus=1", "cat data.txt"], "--bogus"),
        (["-dz", "cat data.txt"], "-z"),
        (["--gpus", "none", "--nope", "echo"], "--nope"),
    ],
)
def test_an_unknown_option_before_the_command_runs_nothing(sky, tmp_path, words, unknown):
    sky("launch", _two_nodes(tmp_path), "-y", check=0)
    before = len(_jobs(sky))
    refused = sky("exec", "c", *words)
    assert refused.exit_code == 1  # skyform's usage error (2 means "plan has changes")
    assert f"No such option: {unknown}" in refused.stderr
    assert "put -- before the command: skyform exec CLUSTER --" in refused.stderr
    assert refused.stdout == "" and len(_jobs(sky)) == before  # nothing ran, nothing recorded
    meant = sky("exec", "c", "--", "--no-follow")  # after `--` it is the command, as asked
    assert meant.exit_code == 127 and "--no-follow: command not found" in meant.stdout


def test_options_are_read_wherever_they_stand_before_the_command(sky, tmp_path):
    sky("launch", _two_nodes(tmp_path), "-y", check=0)
    detached = sky("exec", "--detach-run", "c", "--num-nodes=2", "echo", "-x", check=0)
    assert "job 2 submitted" in detached.stdout  # --detach-run, as `sky exec` spells it
    assert "(c, node=1) -x" in sky("logs", "c", "2", check=0).stdout  # -x is the command's


def test_exec_starts_in_the_workdir_on_the_head_unless_asked(sky, tmp_path):
    sky("launch", _two_nodes(tmp_path), "-y", check=0)
    head = sky("exec", "c", "cat data.txt; echo nodes=$SKYPILOT_NUM_NODES", check=0)
    assert _node_lines(head.stdout) == [
        "(c, node=0) from the workdir",
        "(c, node=0) nodes=1",
    ]  # `sky exec C CMD` is a 1-node task: the head alone, in ~/sky_workdir
    both = sky("exec", "c", "--num-nodes", "2", "cat data.txt; echo $SKYPILOT_NUM_NODES", check=0)
    assert sorted(_node_lines(both.stdout)) == [
        "(c, node=0) 2",
        "(c, node=0) from the workdir",
        "(c, node=1) 2",
        "(c, node=1) from the workdir",
    ]
    one = task_file(tmp_path, "one.yaml", "num_nodes: 1\nrun: echo ips=$SKYPILOT_NODE_IPS\n")
    task = sky("exec", "c", one, check=0)
    assert [ln.split(" ", 2)[2] for ln in _node_lines(task.stdout)] == ["ips=127.0.0.1"]
    assert [j["resources"].split("x")[0] for j in _jobs(sky)][-3:] == ["1", "2", "1"]


def test_a_job_on_the_head_alone_is_read_and_cancelled_there(sky, tmp_path):
    sky("launch", _two_nodes(tmp_path), "-y", check=0)
    sky("exec", "c", "-d", "echo started; sleep 60", check=0)
    assert sky("logs", "c", "2", "--no-follow").exit_code == 101  # running, on node 0 only
    other = sky("logs", "c", "2", "--node", "1")
    assert other.exit_code == 1 and "runs on nodes 0..0 only, not on node 1" in other.stderr
    sky("cancel", "c", "2", check=0)
    (job,) = [j for j in _jobs(sky) if j["job_id"] == 2]
    assert job["status"] == "CANCELLED" and list(job["exit_codes"]) == ["0"]


def test_logs_follows_by_default_with_tail_and_node(sky, skyform_home, tmp_path):
    sky("launch", _two_nodes(tmp_path), "-y", check=0)
    go = tmp_path / "go"  # local nodes share this filesystem: the test says when to end
    script = f"for i in 1 2 3 4 5; do echo line$i; done; until [ -e {go} ]; do sleep 0.1; done"
    sky("exec", "c", "--num-nodes", "2", "-d", f"{script}; echo last", check=0)
    for _ in range(100):  # both nodes wrote their five lines
        if sky("logs", "c", "2", "--no-follow", check=101).stdout.count("line5") == 2:
            break
        time.sleep(0.1)
    env = dict(os.environ, SKYFORM_HOME=str(skyform_home), COLUMNS="200", NO_COLOR="1")
    follow = subprocess.Popen(  # `logs C JOB` follows, as `sky logs` does
        [sys.executable, "-m", "skyform.cli.main", "logs", "c", "2", "--tail", "2"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert follow.stdout is not None
    lines = [follow.stdout.readline().rstrip("\n") for _ in range(4)]
    assert lines == [
        "(c, node=0) line4",
        "(c, node=0) line5",
        "(c, node=1) line4",
        "(c, node=1) line5",
    ]  # the last two lines of each node, and it is still there, waiting
    assert follow.poll() is None
    go.touch()
    rest, _ = follow.communicate(timeout=60)
    assert follow.returncode == 0
    assert sorted(_node_lines(rest)) == ["(c, node=0) last", "(c, node=1) last"]
    snapshot = sky("logs", "c", "2", "--no-follow", "-n", "1", "--node", "1", check=0)
    assert _node_lines(snapshot.stdout) == ["(c, node=1) last"]
    everything = sky("logs", "c", "2", "--no-follow", "--tail", "0", check=0)  # 0: all lines
    assert len(_node_lines(everything.stdout)) == 12


def test_exec_in_the_workdir_on_sshd_nodes(sky, skyform_home, fresh_ssh_nodes, tmp_path):
    write_pool(skyform_home, fresh_ssh_nodes, [0, 1])
    sky("launch", _two_nodes(tmp_path, infra="ssh/lab"), "-y", check=0)
    ran = sky("exec", "c", "--num-nodes", "2", "cat", "data.txt", check=0)
    assert sorted(_node_lines(ran.stdout)) == [
        "(c, node=0) from the workdir",
        "(c, node=1) from the workdir",
    ]
    sky("down", "-y", "c", check=0)
