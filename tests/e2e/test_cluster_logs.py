"""Logs show everything: setup output is streamed during apply (node-prefixed, as run output
is) and kept with the job that ran it, so `logs C JOB` prints setup then run — and a failed
setup's stderr, even after the setup ran again for a later job. How a job ended is always
said after its last line of output."""

from __future__ import annotations

import json

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e

FLAKY_SETUP = """\
name: fs
num_nodes: 2
resources: {infra: ssh/lab}
setup: |
  echo "preparing node $SKYFORM_NODE_RANK"
  if [ ! -e ~/tried-once ]; then
    touch ~/tried-once
    echo "no such package: foo" >&2
    exit 3
  fi
  echo "installed on $SKYFORM_NODE_RANK"
run: echo "ran on $SKYFORM_NODE_RANK"
"""


def test_failed_setup_shows_its_stderr_and_applying_again_runs_it_again(sky, pool, tmp_path):
    task = task_file(tmp_path, "fs.yaml", FLAKY_SETUP)
    failed = sky("apply", task, "-y")
    assert failed.exit_code == 1
    for rank in (0, 1):  # streamed as it ran, prefixed by node like run output
        assert f"(fs, node={rank}, setup) preparing node {rank}" in failed.stdout
        assert f"(fs, node={rank}, setup) no such package: foo" in failed.stdout
    logs = sky("logs", "fs", "1")
    assert logs.exit_code == 0
    assert "(fs, node=1, setup) no such package: foo" in logs.stdout
    assert "job 1 on fs never ran (FAILED_SETUP: setup FAILED_SETUP: node 0 exit 3" in (logs.stderr)

    plan = sky("plan", task, check=0)  # a failed setup is not "No changes"
    assert "its setup did not complete" in plan.stdout and "1 to change" in plan.stdout
    again = sky("apply", task, "-y", check=0)
    assert "(fs, node=1, setup) installed on 1" in again.stdout
    second = sky("logs", "fs", "2", check=0).stdout.splitlines()
    assert second.index("(fs, node=0, setup) installed on 0") < second.index(
        "(fs, node=0) ran on 0"
    )  # setup, then run
    first = sky("logs", "fs", "1", check=0).stdout
    assert "no such package: foo" in first and "installed" not in first  # still its own
    assert [j["status"] for j in json.loads(sky("queue", "fs", "--json").stdout)] == [
        "FAILED_SETUP",
        "SUCCEEDED",
    ]
    sky("down", "-y", "fs", check=0)


TICKS = """\
name: tk
num_nodes: 2
resources: {infra: local}
run: |
  for i in $(seq 1 6); do echo "tick $i"; sleep 0.1; done
  printf "last words"
"""


def test_how_a_job_ended_comes_after_every_line_of_its_output(sky, tmp_path):
    task = task_file(tmp_path, "tk.yaml", TICKS)
    applied = sky("apply", task, "-y", check=0).stdout.splitlines()
    for rank in (0, 1):
        last = applied.index(f"(tk, node={rank}) last words")
        assert last < applied.index(f"  tk node {rank}: run succeeded (exit code 0)")
    sky("exec", "tk", "--detach", str(task), check=0)
    followed = sky("logs", "tk", "2", "--follow", check=0).stdout.splitlines()
    assert followed[-1] == "── job 2 on tk: SUCCEEDED"
    assert sum(line.endswith("last words") for line in followed) == 2
    again = sky("logs", "tk", "2", check=0).stdout.splitlines()  # after the fact: the same
    for rank in (0, 1):
        mine = f"(tk, node={rank}) "
        assert [x for x in again if x.startswith(mine)] == [
            x for x in followed if x.startswith(mine)
        ]
    assert again[-1] == followed[-1]
    sky("down", "-y", "tk", check=0)
