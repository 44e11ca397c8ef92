"""`jobs queue` names the controller service driving each managed job (the holder of the
job's lease), `-` when none; on both stores (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import time

import pytest

from skyform.state.db import open_state
from skyform.state.managed import ManagedJobRecord, ManagedJobs, ManagedJobStatus, ManagedTask

pytestmark = pytest.mark.usefixtures("backend")


def _job(jobs: ManagedJobs, name: str, status: ManagedJobStatus) -> int:
    made = jobs.create(
        ManagedJobRecord(
            id=0,
            name=name,
            status=status,
            task_file="/t.yaml",
            tasks=[ManagedTask(index=0, name=name, cluster=f"{name}-c")],
            submitted_at=time.time() - 60,
        )
    )
    return made.id


def test_queue_shows_which_controller_drives_each_job(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with open_state() as db:
        jobs = ManagedJobs(db)
        driven = _job(jobs, "driven", ManagedJobStatus.RUNNING)
        done = _job(jobs, "done", ManagedJobStatus.SUCCEEDED)
        # a service is registered (so queue starts no controller of its own) and drives `driven`
        db.try_lease("controller/alice@ci-runner:4242", purpose="skyform controller run", ttl=60)
        db.try_lease(f"managed/{driven}", purpose="controller/alice@ci-runner:4242", ttl=60)

    shown = cli("jobs", "queue", "--json")
    assert shown.exit_code == 0, shown.output
    by_id = {j["id"]: j["controller"] for j in json.loads(shown.stdout)}
    assert by_id == {driven: "alice@ci-runner:4242", done: None}

    table = cli("jobs", "queue")
    assert table.exit_code == 0, table.output
    assert "CONTROLLER" in table.stdout
    rows = {line.split()[1]: line.split()[-1] for line in table.stdout.splitlines()[2:] if line}
    assert rows == {"driven": "alice@ci-runner:4242", "done": "-"}


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)  # a team store
def test_a_teammate_s_job_is_not_restarted_from_this_home(cli):
    """On a team store, a job launched from another SKYFORM_HOME (no copy here) whose
    controller is not seen here is left to that machine: never a second controller."""
    with open_state() as db:
        _job(ManagedJobs(db), "theirs", ManagedJobStatus.RUNNING)
    shown = cli("jobs", "queue")
    assert shown.exit_code == 0, shown.output
    assert "started it again" not in shown.stderr
    with open_state() as db:
        assert ManagedJobs(db).require(1).controller_starts == 0
