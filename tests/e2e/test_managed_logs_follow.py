"""`jobs logs ID` follows by default, as `sky jobs logs` does: on a running managed job it
streams until the job ends and exits with the job's code; `--controller` follows the
controller's own log until the job ends too. (`--no-follow` after the fact:
test_managed_jobs_local.py.)"""

from __future__ import annotations

import pytest
from e2ekit import managed_job, task_file, wait_for_job

pytestmark = pytest.mark.e2e

PAUSED = """\
name: paused
resources: {infra: local}
run: |
  echo "before the pause"
  sleep 3
  echo "after the pause"
"""


def _launch_running(sky, tmp_path) -> None:
    sky("jobs", "launch", task_file(tmp_path, "paused.yaml", PAUSED), "-d", check=0)
    wait_for_job(sky, lambda j: j["status"] == "RUNNING")


def test_jobs_logs_streams_a_running_job_until_it_ends(sky, tmp_path):
    _launch_running(sky, tmp_path)
    followed = sky("jobs", "logs", "1", check=0)  # 0: the job succeeded (1 failed, 4 no resources)
    lines = followed.stdout.strip().splitlines()
    before = lines.index("(paused, node=0) before the pause")
    assert lines.index("(paused, node=0) after the pause") > before
    assert lines[-1] == "── managed job 1: SUCCEEDED (every task succeeded)"


def test_jobs_logs_controller_follows_until_the_job_ends(sky, tmp_path):
    _launch_running(sky, tmp_path)
    sky("jobs", "logs", "1", "--controller", check=0)
    job = managed_job(sky)
    assert job is not None and job["status"] == "SUCCEEDED"
