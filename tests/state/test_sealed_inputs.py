"""A managed job's sealed inputs in the store (ops/managed/sealed.py): what a controller with
another SKYFORM_HOME gets back, and the clear refusals (no passphrase, a wrong one, a stored
task that is not the one launched). The embedded SQLite store keeps none, as before."""

from __future__ import annotations

import json

import pytest

from skyform.errors import StateError
from skyform.ops.managed import jobdir, sealed
from skyform.state.db import open_state
from skyform.state.managed import ManagedJobs
from skyform.state.teamkeys import unseal

TASK = b"name: t\nsecrets: {TOKEN: null}\nrun: echo hi\n"


def _launch_here(job_id: int = 1) -> None:
    jobdir.save_task(job_id, TASK)
    jobdir.save_inputs(job_id, envs=["A=1"], secrets=["TOKEN=s3cret"], overrides={"gpus": "L4"})


@pytest.fixture
def team(pg_url, monkeypatch, tmp_path):
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "team secret")
    _launch_here()
    with open_state() as db:
        assert sealed.share(db, 1)
    other = tmp_path / "other-home"  # the adopting controller's machine
    other.mkdir()
    monkeypatch.setenv("SKYFORM_HOME", str(other))
    return other


def test_another_home_gets_the_task_and_inputs_back(team):
    with open_state() as db:
        assert sealed.runnable_here(db, 1) and sealed.materialise(db, 1)
        assert not sealed.materialise(db, 1)  # there now: read locally from then on
    assert (team / "jobs" / "1" / "task.yaml").read_bytes() == TASK
    assert jobdir.load_inputs(1) == {
        "envs": ["A=1"],
        "secrets": ["TOKEN=s3cret"],
        "overrides": {"gpus": "L4"},
        "base_dir": None,  # the launch's current directory: none was sealed with this job
    }


def test_without_the_passphrase_the_controller_is_told_to_set_it(team, monkeypatch):
    monkeypatch.delenv("SKYFORM_PASSPHRASE")
    with open_state() as db:
        assert not sealed.runnable_here(db, 1)
        with pytest.raises(StateError, match="encrypted") as err:
            sealed.materialise(db, 1)
    assert "Set SKYFORM_PASSPHRASE" in (err.value.hint or "")
    assert not (team / "jobs" / "1" / "task.yaml").exists()


def test_a_wrong_passphrase_is_named(team, monkeypatch):
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "not it")
    with open_state() as db, pytest.raises(StateError, match="not the passphrase"):
        sealed.materialise(db, 1)


def test_a_stored_task_that_is_not_the_launched_one_is_refused(team):
    with open_state() as db:
        with db.transaction() as conn:
            conn.execute("UPDATE managed_inputs SET task_digest=? WHERE job_id=?", ("sha256:0", 1))
        with pytest.raises(StateError, match="not the one it was launched with"):
            sealed.materialise(db, 1)


def test_secrets_are_dropped_from_the_store_when_the_job_ends(team):
    with open_state() as db:
        sealed.materialise(db, 1)
        sealed.forget_secrets(db, 1)
        found = ManagedJobs(db).get_inputs(1)
    assert found is not None
    stored = json.loads(unseal("team secret", found[1], what="inputs"))
    assert stored["secrets"] == ["TOKEN="] and stored["envs"] == ["A=1"]


def test_the_embedded_sqlite_store_keeps_no_inputs(monkeypatch):
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "team secret")
    _launch_here()
    with open_state() as db:
        assert not sealed.share(db, 1)
        assert ManagedJobs(db).get_inputs(1) is None


def test_damaged_stored_inputs_say_to_launch_again(team):
    with open_state() as db:
        with db.transaction() as conn:
            conn.execute("UPDATE managed_inputs SET sealed=? WHERE job_id=?", ("v1:!!", 1))
        with pytest.raises(StateError, match="damaged") as err:
            sealed.materialise(db, 1)
    assert err.value.hint == "Cancel the job and launch it again."
