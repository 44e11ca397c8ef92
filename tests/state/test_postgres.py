"""Team mode's store on a real PostgreSQL server (tests/pgserver.py): the same tables as
SQLite, clear errors naming the URL without its password, and a server restart in the
middle of a write leaves nothing half-written."""

from __future__ import annotations

import socket
import threading

import pytest
from helpers import local_cluster_record

from skyform.errors import StateError
from skyform.state.db import open_state

_record = local_cluster_record


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_server_is_a_clear_error_without_the_password(monkeypatch):
    pytest.importorskip("psycopg")
    port = _closed_port()
    monkeypatch.setenv("SKYFORM_STATE_URL", f"postgresql://ci:s3cret-pw@127.0.0.1:{port}/team")
    with pytest.raises(StateError) as err:
        open_state()
    assert err.value.message.startswith(
        f"cannot reach the state database postgresql://ci:***@127.0.0.1:{port}/team: "
    )
    assert "s3cret-pw" not in err.value.message + (err.value.hint or "")
    assert "SKYFORM_STATE_URL" in (err.value.hint or "")


def test_both_stores_have_the_same_tables_and_columns(pg_url, monkeypatch):
    with open_state() as lite:
        tables = [
            r["name"]
            for r in lite.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            ).fetchall()
        ]
        expected = {
            t: [r["name"] for r in lite.execute(f"PRAGMA table_info({t})").fetchall()]
            for t in tables
        }
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    with open_state() as pg:
        rows = pg.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema='public' ORDER BY table_name, ordinal_position"
        ).fetchall()
    found: dict[str, list[str]] = {}
    for row in rows:
        found.setdefault(row["table_name"], []).append(row["column_name"])
    assert found == expected


def test_a_restart_in_the_middle_of_a_write_leaves_nothing_half_written(
    pg_server, pg_url, monkeypatch
):
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    with open_state() as db:
        db.put_cluster(_record("kept"))
        lost = pytest.raises(StateError, match="lost the connection to the state database")
        with lost as err, db.transaction():
            db.put_cluster(_record("half"))
            pg_server.stop("fast")
            pg_server.start()
            db.delete_cluster("kept")
        assert "was not written" in err.value.message
    with open_state() as db:
        assert [c.name for c in db.list_clusters()] == ["kept"]
        assert db.serial == 1


def test_a_restart_between_writes_is_ridden_out_and_the_next_write_lands(
    pg_server, pg_url, monkeypatch
):
    """A long command (an apply following its job) keeps its connection while the server
    restarts: its next read and its next write reconnect instead of failing."""
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    with open_state() as db:
        db.put_cluster(_record("before"))
        pg_server.stop("fast")
        pg_server.start()
        assert [c.name for c in db.list_clusters()] == ["before"]
        pg_server.stop("fast")
        pg_server.start()
        db.put_cluster(_record("after"))
    with open_state() as db:
        assert [c.name for c in db.list_clusters()] == ["after", "before"]


def test_a_server_away_longer_than_the_retry_window_fails_saying_how_long_it_tried(
    pg_server, pg_url, monkeypatch
):
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    monkeypatch.setenv("SKYFORM_STATE_RETRY", "1")
    with open_state() as db:
        db.put_cluster(_record("kept"))
        pg_server.stop("fast")
        try:
            with pytest.raises(StateError) as err:
                db.put_cluster(_record("lost"))
        finally:
            pg_server.start()
        assert "lost the connection to the state database" in err.value.message
        assert "tried to reconnect for 1 s" in err.value.message
        assert "was not written" in err.value.message
        db.put_cluster(_record("later"))  # the server is back: the same store goes on
    with open_state() as db:
        assert [c.name for c in db.list_clusters()] == ["kept", "later"]


def test_a_holder_frozen_inside_a_transaction_does_not_keep_the_write_lock(pg_url, monkeypatch):
    """A process suspended mid-transaction (a frozen VM) holds the store's write lock: the
    server ends its session after 2x the lease time (10 s at least), others write again,
    and the frozen one, woken, finds its change was not written."""
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    monkeypatch.setenv("SKYFORM_LEASE_TTL", "1")
    with open_state() as frozen, open_state() as other:
        wrote = threading.Event()
        writer = threading.Thread(target=lambda: (other.put_cluster(_record("other")), wrote.set()))
        with pytest.raises(StateError, match="lost the connection"), frozen.transaction():
            frozen.put_cluster(_record("half"))
            writer.start()
            assert wrote.wait(30)  # the frozen session was ended: the lock is free again
            frozen.put_cluster(_record("woken"))
        writer.join()
    with open_state() as db:
        assert [c.name for c in db.list_clusters()] == ["other"]
