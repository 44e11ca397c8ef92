"""A managed job's output in the store (state/managed_logs.py, ops/managed/logstore.py): the
chunk table on both stores, and on a team store what a machine without the controller's
copies reads back with `jobs logs` — the same lines, sealed at rest, bounded."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from skyform.errors import StateError
from skyform.ops.managed import logs, logstore
from skyform.ops.managed.logmirror import attempt_logs, log_path
from skyform.ops.managed.logs import stream
from skyform.ops.managed.logstore import CHUNK, StoreCopy
from skyform.state import teamkeys
from skyform.state.db import open_state
from skyform.state.managed import ManagedJobRecord, ManagedJobs, ManagedTask
from skyform.state.managed_logs import LogKey, ManagedLogs

FIRST, SECOND = LogKey(0, 0, 1, 0), LogKey(0, 1, 2, 0)  # an attempt, and its recovery


def _job(db) -> int:
    record = ManagedJobRecord(
        id=0,
        name="train",
        task_file="/t.yaml",
        tasks=[ManagedTask(index=0, name="t", cluster="c1")],
        submitted_at=1.5,
    )
    return ManagedJobs(db).create(record).id


@pytest.mark.usefixtures("backend")
def test_chunks_come_back_in_order_and_a_chunk_stored_twice_is_kept_once():
    with open_state() as db:
        job = _job(db)
        store = ManagedLogs(db)
        store.append(job, FIRST, [(0, 3, "a"), (3, 2, "b")])
        store.append(job, FIRST, [(3, 2, "b again")])  # a controller started again
        store.append(job, SECOND, [(0, 4, "c")])
        assert store.stored_sizes(job) == {FIRST: 5, SECOND: 4}
        chunks = store.chunks(job)
        assert [(c.key, c.offset, c.sealed) for c in chunks] == [
            (FIRST, 0, "a"),
            (FIRST, 3, "b"),
            (SECOND, 0, "c"),
        ]
        assert [c.sealed for c in store.chunks(job, after=chunks[1].id)] == ["c"]
        ManagedJobs(db).delete(job)
        assert not store.has_output(job)


def _write(job: int, key: LogKey, data: bytes) -> None:
    with open(log_path(job, key), "ab") as fh:
        fh.write(data)


def _files(job: int) -> dict[LogKey, object]:
    return {k: log_path(job, k) for k in (FIRST, SECOND)}


def _read(db, job: int) -> tuple[list[str], list[str]]:
    lines, notes = [], []
    stream(db, job, follow=False, on_line=lambda ln: lines.append(ln.text), on_note=notes.append)
    return lines, notes


@pytest.fixture
def team(pg_url, monkeypatch, tmp_path):
    """A job whose controller ran under this home; returns a second home (another machine)."""
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "team secret")
    other = tmp_path / "other-home"
    other.mkdir()
    return other


def test_another_home_reads_every_attempt_from_the_store(team, monkeypatch):
    long_line = b"x" * (CHUNK + 100)  # spans two chunks
    with open_state() as db:
        job = _job(db)
        copy = StoreCopy.for_job(db, job)
        assert copy is not None
        _write(job, FIRST, b"tick 1\ntick 2\n" + long_line + b"\npreempted mid-li")
        _write(job, SECOND, b"tick 1\n")
        copy.flush(_files(job), force=True)
        _write(job, SECOND, b"done\n")
        StoreCopy.for_job(db, job).flush(_files(job), force=True)  # a controller restarted
        rows = db.execute("SELECT sealed FROM managed_logs").fetchall()
    assert len(rows) == 4  # two chunks of the long attempt, one of the recovery, one more
    for row in rows:  # sealed at rest, not encoded
        assert b"tick" not in base64.b64decode(row["sealed"].split(":")[-1])

    monkeypatch.setenv("SKYFORM_HOME", str(team))
    with open_state() as db:
        lines, notes = _read(db, job)
    assert lines == ["tick 1", "tick 2", long_line.decode(), "preempted mid-li", "tick 1", "done"]
    assert notes[0].startswith("task t, attempt 1 (recovery 0, cluster job 1)")
    assert notes[1].startswith("task t, attempt 2 (recovery 1, cluster job 2)")
    assert notes[-1] == "managed job 1: PENDING"


def test_after_an_adoption_each_home_shows_both_controllers_attempts(team, monkeypatch):
    first = Path(os.environ["SKYFORM_HOME"])  # the controller that ran attempt 1, then died
    with open_state() as db:
        job = _job(db)
        _write(job, FIRST, b"first try\n")
        StoreCopy.for_job(db, job).flush(_files(job), force=True)
        monkeypatch.setenv("SKYFORM_HOME", str(team))  # the service that adopted the job
        _write(job, SECOND, b"second try\n")
        StoreCopy.for_job(db, job).flush(_files(job), force=True)
        assert _read(db, job)[0] == ["first try", "second try"]
        monkeypatch.setenv("SKYFORM_HOME", str(first))
        assert _read(db, job)[0] == ["first try", "second try"]


def test_without_the_passphrase_another_home_is_told_to_set_it(team, monkeypatch):
    with open_state() as db:
        job = _job(db)
        _write(job, FIRST, b"secret output\n")
        StoreCopy.for_job(db, job).flush(_files(job), force=True)
    monkeypatch.setenv("SKYFORM_HOME", str(team))
    monkeypatch.delenv("SKYFORM_PASSPHRASE")
    with open_state() as db:
        lines, notes = _read(db, job)
        assert lines == []
        assert notes[:2] == [
            "managed job 1's output is in the team's state store",
            "Set SKYFORM_PASSPHRASE to the team's passphrase to read its output from the state "
            "store on this machine.",
        ]
        monkeypatch.setenv("SKYFORM_PASSPHRASE", "not the team's")
        with pytest.raises(StateError, match="cannot decrypt managed job 1's output"):
            _read(db, job)


def test_flushes_wait_for_the_interval_or_a_full_chunk(team, monkeypatch):
    with open_state() as db:
        job = _job(db)
        copy = StoreCopy.for_job(db, job)
        _write(job, FIRST, b"a\n")
        copy.flush(_files(job))
        assert ManagedLogs(db).stored_sizes(job) == {FIRST: 2}  # the first is due at once
        _write(job, FIRST, b"b\n")
        copy.flush(_files(job))  # under a second later, a small gain: it waits
        assert ManagedLogs(db).stored_sizes(job) == {FIRST: 2}
        _write(job, FIRST, b"c" * CHUNK)
        copy.flush(_files(job))  # a full chunk waits no longer
        assert ManagedLogs(db).stored_sizes(job) == {FIRST: 4 + CHUNK}


def test_the_store_keeps_at_most_the_cap_and_the_reader_says_so(team, monkeypatch):
    monkeypatch.setattr(logstore, "JOB_CAP", 10)
    monkeypatch.setattr(logs, "JOB_CAP", 10)
    with open_state() as db:
        job = _job(db)
        _write(job, FIRST, b"0123456\n")
        _write(job, SECOND, b"789abcdef\n")
        StoreCopy.for_job(db, job).flush(_files(job), force=True)
        assert sum(ManagedLogs(db).stored_sizes(job).values()) == 10
    monkeypatch.setenv("SKYFORM_HOME", str(team))
    with open_state() as db:
        lines, notes = _read(db, job)
    assert lines == ["0123456", "78"]
    assert any("keeps the first 10 bytes" in n for n in notes)


def test_many_chunks_derive_the_key_once(team, monkeypatch):
    derived = []
    real = teamkeys._key
    monkeypatch.setattr(teamkeys, "_key", lambda s, salt: derived.append(salt) or real(s, salt))
    monkeypatch.setattr(logstore, "_sealers", {})
    with open_state() as db:
        job = _job(db)
        _write(job, FIRST, b"y" * (5 * CHUNK))
        StoreCopy.for_job(db, job).flush(_files(job), force=True)
        assert len(ManagedLogs(db).chunks(job)) == 5
    assert len(derived) == 1


def test_the_embedded_store_keeps_no_output(monkeypatch):
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "team secret")
    with open_state() as db:
        assert StoreCopy.for_job(db, _job(db)) is None


def test_output_a_lost_connection_left_behind_is_stored_by_the_next_controller(
    team, pg_server, monkeypatch
):
    monkeypatch.setenv("SKYFORM_STATE_RETRY", "0.5")  # the server stays away longer
    with open_state() as db:
        job = _job(db)
        _write(job, FIRST, b"stored\n")
        StoreCopy.for_job(db, job).flush(_files(job), force=True)
        failures: list[str] = []
        copy = StoreCopy.for_job(db, job, failures.append)
        _write(job, FIRST, b"before the restart\n")
        pg_server.stop("fast")
        try:
            copy.flush(_files(job), force=True)  # the attempt's end: the write is lost
        finally:
            pg_server.start()
        assert failures and "lost the connection to the state database" in failures[0]
    with open_state() as db:  # the controller started again: its catch-up at start
        StoreCopy.for_job(db, job).flush(attempt_logs(job), force=True)
        assert ManagedLogs(db).stored_sizes(job) == {FIRST: 26}
        assert _read(db, job)[0] == ["stored", "before the restart"]
