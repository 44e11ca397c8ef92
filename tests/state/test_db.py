"""State database: lineage/serial semantics, records round-trip, reservations, usage, safety."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from skyform.errors import StateError
from skyform.plan.model import ClusterSpec, PlacedOffer
from skyform.state.db import open_state
from skyform.state.models import (
    ClusterHandle,
    ClusterRecord,
    ClusterStatus,
    JobRecord,
    JobStatus,
    NodeHandle,
)

OFFER = PlacedOffer(
    cloud="ssh",
    context="lab",
    region="west",
    zone="west-a",
    instance_type="host",
    spot=True,
    hourly_price=0.5,
)


def record(name="c1", status=ClusterStatus.UP, node_ids=("ssh/lab/h1:22",)) -> ClusterRecord:
    nodes = [
        NodeHandle(rank=i, host="127.0.0.1", port=2200 + i, ip="127.0.0.1", node_id=n)
        for i, n in enumerate(node_ids)
    ]
    handle = ClusterHandle(name=name, engine="ssh", infra=OFFER.infra, offer=OFFER, nodes=nodes)
    return ClusterRecord(
        name=name,
        status=status,
        handle=handle,
        hourly_price=0.5,
        spec=ClusterSpec(name=name, offer=OFFER, num_nodes=len(nodes)),
        source="task.yaml",
        launched_at=100.0,
    )


def test_fresh_state_has_lineage_and_serial_zero_and_private_files(skyform_home):
    db = open_state()
    assert db.serial == 0 and len(db.lineage) == 36
    assert stat.S_IMODE(os.stat(skyform_home / "state.db").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(skyform_home).st_mode) == 0o700
    assert db._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    lineage = db.lineage
    db.close()
    assert open_state().lineage == lineage  # reopening keeps the lineage


def test_serial_bumps_on_cluster_changes_only():
    db = open_state()
    db.put_cluster(record())
    assert db.serial == 1
    db.set_cluster_status("c1", ClusterStatus.INIT)
    assert db.serial == 2
    job_id = db.next_job_id("c1")
    db.put_job(
        JobRecord(
            cluster="c1",
            job_id=job_id,
            name="j",
            task_id="t",
            status=JobStatus.RUNNING,
            submitted_at=1.0,
        )
    )
    db.add_event("job", "started", cluster="c1", job_id=job_id)
    assert db.serial == 2  # jobs and events leave plans fresh
    db.delete_cluster("c1")
    assert db.serial == 3
    assert db.get_cluster("c1") is None


def test_cluster_record_round_trips():
    db = open_state()
    db.put_cluster(record())
    assert db.get_cluster("c1") == record()
    assert [c.name for c in db.list_clusters()] == ["c1"]


def test_a_host_cannot_belong_to_two_clusters():
    db = open_state()
    db.put_cluster(record("c1"))
    with pytest.raises(StateError, match="already part of cluster 'c1'"):
        db.put_cluster(record("c2"))
    assert db.get_cluster("c2") is None  # the failed write changed nothing
    assert db.serial == 1
    with pytest.raises(StateError, match="already part of cluster 'c1'"):
        db.reserve_nodes("c3", ["ssh/lab/h2:22", "ssh/lab/h1:22"])
    assert "ssh/lab/h2:22" not in db.taken_nodes()  # all or nothing


def test_job_ids_increase_per_cluster_and_restart_with_a_new_incarnation():
    db = open_state()
    db.put_cluster(record())
    assert [db.next_job_id("c1") for _ in range(3)] == [1, 2, 3]
    assert db.next_job_id("other") == 1
    db.delete_cluster("c1")
    assert db.next_job_id("c1") == 1


def test_usage_intervals_keep_recorded_price():
    db = open_state()
    rec = record()
    db.open_usage(rec, started_at=1000.0, reason="apply")
    db.close_usage("c1", ended_at=4600.0)
    (interval,) = db.usage()
    assert interval.hourly_price == 0.5 and interval.num_nodes == 1
    assert interval.ended_at - interval.started_at == 3600.0
    assert interval.offer == OFFER


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


def test_concurrent_writers_serialize(skyform_home):
    script = (
        "from skyform.state.db import open_state\n"
        "db = open_state()\n"
        "for _ in range(50):\n"
        "    db.next_job_id('c')\n"
    )
    env = dict(os.environ, SKYFORM_HOME=str(skyform_home))
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env) for _ in range(4)]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    assert open_state().next_job_id("c") == 201


def test_state_path_follows_skyform_home(skyform_home):
    assert Path(open_state().path) == skyform_home / "state.db"
