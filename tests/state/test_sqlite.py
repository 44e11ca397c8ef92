"""The embedded SQLite store: a private WAL file under SKYFORM_HOME (or at a sqlite:/// URL),
refused clearly when damaged or newer than this skyform."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from skyform.errors import StateError
from skyform.state.db import open_state
from skyform.state.store import state_exists, state_url


def test_fresh_state_is_a_private_wal_file_under_skyform_home(skyform_home):
    with open_state() as db:
        assert db.kind == "sqlite" and db.url == f"sqlite:///{skyform_home / 'state.db'}"
        assert stat.S_IMODE(os.stat(skyform_home / "state.db").st_mode) == 0o600
        assert stat.S_IMODE(os.stat(skyform_home).st_mode) == 0o700
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_newer_schema_is_refused(skyform_home):
    open_state().close()
    conn = sqlite3.connect(skyform_home / "state.db")
    conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StateError, match="state schema 99"):
        open_state()


def test_garbage_file_is_a_clear_error(skyform_home):
    (skyform_home / "state.db").write_bytes(b"not a database" * 100)
    with pytest.raises(StateError, match="cannot open the state database"):
        open_state()


def test_state_path_follows_skyform_home(skyform_home):
    with open_state() as db:
        assert Path(db.path) == skyform_home / "state.db"


def test_a_sqlite_url_names_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("SKYFORM_STATE_URL", f"sqlite:///{tmp_path}/team/state.db")
    with open_state() as db:
        assert db.path == tmp_path / "team" / "state.db" and db.path.exists()


def test_config_yaml_can_name_the_store(tmp_path, skyform_home):
    (skyform_home / "config.yaml").write_text(f"state:\n  url: sqlite:///{tmp_path}/x.db\n")
    assert state_url() == f"sqlite:///{tmp_path}/x.db"
    assert not state_exists()  # reading never creates it
    with open_state() as db:
        assert db.path == tmp_path / "x.db"
    assert state_exists()


def test_an_unknown_scheme_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("SKYFORM_STATE_URL", "mysql://root:hunter2@db/x")
    with pytest.raises(StateError, match="neither sqlite:///path nor postgresql://") as err:
        open_state()
    assert "hunter2" not in err.value.message
