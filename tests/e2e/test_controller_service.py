"""`skyform controller run` on a shared PostgreSQL store: `jobs launch` only submits while a
service is registered; one service adopts the job; `kill -9` of it (with the controller it
started) while the job runs: the other service adopts the job and it finishes with its work
done once."""

from __future__ import annotations

import os
import signal

import pytest
from e2ekit import adoptions, controller_service, task_file, wait_for_job, wait_until

from skyform.state.db import open_state

pytestmark = pytest.mark.e2e


def test_a_killed_service_s_job_is_adopted_by_the_other_and_runs_once(
    sky, skyform_home, tmp_path, pg_url, monkeypatch
):
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    marker = tmp_path / "runs"
    env = dict(os.environ, SKYFORM_HOME=str(skyform_home), SKYFORM_LEASE_TTL="3")
    services = [controller_service(env), controller_service(env)]
    try:
        with open_state() as db:
            wait_until(lambda: len(db.list_leases("controller/")) == 2)
        task = task_file(
            tmp_path,
            "once.yaml",
            f"name: once\nresources: {{infra: local}}\nrun: echo once >> {marker}; sleep 8\n",
        )
        launched = sky("jobs", "launch", task, "-d", check=0)
        assert "Submitted: controller " in launched.stderr and "will run it" in launched.stderr
        wait_for_job(sky, lambda j: j["status"] == "RUNNING", timeout=60)
        (first,) = wait_until(lambda: adoptions(1))
        victim = next(p for p in services if first.endswith(f":{p.pid}"))
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        adopted = wait_until(lambda: adoptions(1)[1:], timeout=20)
        survivor = next(p for p in services if p is not victim)
        assert adopted == [a for a in adopted if a.endswith(f":{survivor.pid}")]
        job = wait_for_job(sky, lambda j: j["status"] in ("SUCCEEDED", "FAILED"), timeout=90)
        assert job["status"] == "SUCCEEDED"
        assert marker.read_text() == "once\n"  # the work ran once across both controllers
    finally:
        for proc in services:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
