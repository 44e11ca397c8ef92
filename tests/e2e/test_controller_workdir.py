"""A managed job whose workdir (or a local file-mount source) is on the launching machine
runs there, while controller services are registered on a shared store: the files are synced
from that machine (they are not in the store), so a service on another machine could only
fail the job. `jobs launch` starts the job's controller here and says why; a service never
adopts a job whose files its machine does not have."""

from __future__ import annotations

import time

import pytest
from e2ekit import task_file, wait_for_job

from skyform.controllers import loop
from skyform.controllers.lease import job_lease
from skyform.ops.managed import jobdir
from skyform.ops.managed.adoptable import ManagedJobsKind
from skyform.state.db import open_state
from skyform.state.managed import ManagedJobRecord, ManagedJobs

pytestmark = pytest.mark.e2e


def test_a_job_with_a_local_workdir_runs_on_the_launching_machine(
    sky, tmp_path, pg_url, monkeypatch
):
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "data.txt").write_text("from the laptop\n")
    marker = tmp_path / "seen"
    task = task_file(
        tmp_path,
        "wd.yaml",
        f"name: wd\nworkdir: ./src\nresources: {{infra: local}}\nrun: cat data.txt >> {marker}\n",
    )
    with open_state() as db:  # a controller service registered elsewhere (never adopts here)
        assert db.try_lease("controller/ci@runner:7", purpose="controller run", ttl=600)
        launched = sky("jobs", "launch", task, "-d", check=0)
        assert "Started a controller on this machine: the job syncs " in launched.stderr
        assert f"{tmp_path / 'src'} from here" in launched.stderr
        assert "controller ci@runner:7 cannot reach" in launched.stderr
        wait_for_job(sky, lambda j: j["status"] == "SUCCEEDED", timeout=90)
        assert marker.read_text() == "from the laptop\n"
        (record,) = ManagedJobs(db).list()
        assert record.local_paths == (str(tmp_path / "src"),)


def test_a_service_leaves_a_job_whose_files_are_on_another_machine(
    skyform_home, pg_url, monkeypatch
):
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    spawned: list[int] = []
    monkeypatch.setattr(loop, "_spawn", lambda work, lease: spawned.append(work.lease))
    with open_state() as db:
        jobs = ManagedJobs(db)
        elsewhere = {  # launched on a laptop: its workdir is there, not on this machine
            "id": 0, "name": "wd", "task_file": "/home/alice/proj/wd.yaml",
            "local_paths": ["/home/alice/proj/src"], "submitted_at": time.time(),
            "tasks": [{"index": 0, "name": "wd", "cluster": "j1-wd"}],
        }  # fmt: skip
        record = jobs.create(ManagedJobRecord.model_validate(elsewhere))
        jobdir.save_task(record.id, b"name: wd\nworkdir: ./src\nrun: ls\n")  # runnable else
        said: list[str] = []
        loop.adopt(db, ManagedJobsKind(), {}, "controller/ci@runner:7", 5.0, said.append)
        assert spawned == [] and db.get_lease(job_lease(record.id)) is None
        assert said == [
            f"managed job {record.id}: it syncs /home/alice/proj/src from the machine that "
            "launched it, which this one does not have: left to a controller there"
        ]
