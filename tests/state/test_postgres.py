"""Team mode's store on a real PostgreSQL server (tests/pgserver.py): the same tables as
SQLite, clear errors naming the URL without its password, and a server restart in the
middle of a write leaves nothing half-written."""

from __future__ import annotations

import socket

import pytest

from skyform.errors import StateError
from skyform.plan.model import ClusterSpec, PlacedOffer
from skyform.state.db import open_state
from skyform.state.models import ClusterRecord, ClusterStatus

OFFER = PlacedOffer(
    cloud="local", region="local", zone=None, instance_type="local", spot=False, hourly_price=0.0
)


def _record(name: str) -> ClusterRecord:
    return ClusterRecord(
        name=name,
        status=ClusterStatus.UP,
        spec=ClusterSpec(name=name, offer=OFFER, num_nodes=1),
        hourly_price=0.0,
    )


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
