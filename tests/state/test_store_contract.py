"""The state-store contract, on both stores (the `backend` fixture: SQLite and PostgreSQL):
lineage/serial semantics, records round-trip, reservations, usage, transactions, leases,
concurrency. SQLite-only behaviour (files, WAL) is in test_sqlite.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from skyform.errors import StateError
from skyform.plan.model import AutostopSetting, ClusterSpec, PlacedOffer
from skyform.state.buckets import BucketRecord, get_bucket, list_buckets, put_bucket
from skyform.state.db import open_state
from skyform.state.managed import ManagedJobRecord, ManagedJobs, ManagedTask
from skyform.state.models import (
    ClusterHandle,
    ClusterRecord,
    ClusterStatus,
    JobRecord,
    JobStatus,
    NodeHandle,
)
from skyform.state.revisions import Revisions, job_owner
from skyform.state.sqlcore import whoami
from skyform.state.store import StateStore

pytestmark = pytest.mark.usefixtures("backend")

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


@pytest.fixture
def db():
    with open_state() as store:
        yield store


def test_serial_bumps_on_cluster_changes_only(db):
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


def test_cluster_record_round_trips(db):
    db.put_cluster(record())
    assert db.get_cluster("c1") == record()
    assert [c.name for c in db.list_clusters()] == ["c1"]


def _of(offer, fields: tuple[str, ...]) -> list:
    return [getattr(offer, f) for f in fields]


def test_cluster_rows_read_what_status_prints_of_each_record(db):
    gpu = OFFER.model_copy(
        update={"accelerator": "A100", "accelerator_count": 8, "vcpus": 96, "memory_gib": 1152}
    )
    db.put_cluster(record("c2", ClusterStatus.STOPPED, node_ids=("ssh/lab/h2:22",)))
    db.put_cluster(
        record("c1").model_copy(
            update={"spec": ClusterSpec(name="c1", offer=gpu, num_nodes=2), "launched_at": None}
        )
    )
    rows = db.cluster_rows()
    assert rows is not None
    shown = ("infra", "accelerator", "accelerator_count", "vcpus", "memory_gib", "spot")
    assert [
        (r.name, r.status, r.num_nodes, r.launched_at, r.hourly_price, *_of(r.offer, shown))
        for r in rows
    ] == [
        (
            c.name,
            c.status,
            c.spec.num_nodes,
            c.launched_at,
            c.hourly_price,
            *_of(c.spec.offer, shown),
        )
        for c in db.list_clusters()
    ]
    assert rows[0].offer.infra == "ssh/lab/west/west-a" and rows[0].offer.accelerator == "A100"


def test_a_record_with_autostop_is_left_to_the_models(db):
    db.put_cluster(record("c1"))
    assert db.cluster_rows() is not None
    spec = ClusterSpec(name="c2", offer=OFFER, num_nodes=1, autostop=AutostopSetting(stop_after=10))
    db.put_cluster(record("c2", node_ids=("ssh/lab/h2:22",)).model_copy(update={"spec": spec}))
    assert db.cluster_rows() is None  # status converges autostop, with the models


def test_a_host_cannot_belong_to_two_clusters(db):
    db.put_cluster(record("c1"))
    with pytest.raises(StateError, match="already part of cluster 'c1'"):
        db.put_cluster(record("c2"))
    assert db.get_cluster("c2") is None  # the failed write changed nothing
    assert db.serial == 1
    with pytest.raises(StateError, match="already part of cluster 'c1'"):
        db.reserve_nodes("c3", ["ssh/lab/h2:22", "ssh/lab/h1:22"])
    assert "ssh/lab/h2:22" not in db.taken_nodes()  # all or nothing


def test_job_ids_increase_per_cluster_and_restart_with_a_new_incarnation(db):
    db.put_cluster(record())
    assert [db.next_job_id("c1") for _ in range(3)] == [1, 2, 3]
    assert db.next_job_id("other") == 1
    db.delete_cluster("c1")
    assert db.next_job_id("c1") == 1


def test_usage_intervals_keep_recorded_price(db):
    rec = record()
    db.open_usage(rec, started_at=1000.0, reason="apply")
    db.close_usage("c1", ended_at=4600.0)
    (interval,) = db.usage()
    assert interval.hourly_price == 0.5 and interval.num_nodes == 1
    assert interval.ended_at - interval.started_at == 3600.0
    assert interval.offer == OFFER


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
    with open_state() as db:
        assert db.next_job_id("c") == 201


def test_store_keeps_the_contract_and_names_its_url(db, backend):
    assert isinstance(db, StateStore)
    assert db.kind == backend
    assert db.serial == 0 and len(db.lineage) == 36
    with open_state() as again:
        assert again.lineage == db.lineage  # reopening keeps the lineage


def test_a_failed_transaction_changes_nothing(db):
    db.put_cluster(record("c1"))
    with pytest.raises(RuntimeError), db.transaction():
        db.put_cluster(record("c2", node_ids=("ssh/lab/h9:22",)))
        db.delete_cluster("c1")
        raise RuntimeError("boom")
    assert [c.name for c in db.list_clusters()] == ["c1"]
    assert db.serial == 1 and db.cluster_version("c2") == 0


def test_cluster_versions_say_who_changed_what_and_when(db):
    before = time.time()
    db.put_cluster(record("c1"))
    db.put_cluster(record("c2", node_ids=("ssh/lab/h2:22",)))
    assert (db.cluster_version("c1"), db.cluster_version("c2"), db.serial) == (1, 2, 2)
    change = db.cluster_change("c1")
    assert change is not None and change.by == whoami()
    assert before - 1 <= change.at <= time.time() + 1
    assert change.command.startswith("skyform")
    assert db.cluster_change("never") is None


def test_a_newer_schema_is_refused_naming_both_versions(db):
    with db.transaction() as conn:
        conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(StateError, match="state schema 99") as err:
        open_state()
    assert "knows state schema" in err.value.message


def test_a_lease_is_exclusive_until_released(db):
    lease = db.try_lease("cluster/c1", purpose="skyform apply p.json", ttl=30)
    assert lease is not None and lease.owner == whoami() and lease.pid == os.getpid()
    with open_state() as other:
        assert other.try_lease("cluster/c1", purpose="x", ttl=30) is None
        assert other.try_lease("cluster/c2", purpose="x", ttl=30) is not None
        held = other.get_lease("cluster/c1")
        assert held is not None and held.purpose == "skyform apply p.json"
    db.release_lease(lease)
    assert db.get_lease("cluster/c1") is None
    assert db.try_lease("cluster/c1", purpose="again", ttl=30) is not None


def test_an_expired_lease_is_free_and_its_old_holder_cannot_renew_it(db):
    lease = db.try_lease("cluster/c1", purpose="first", ttl=0.3)
    assert lease is not None and db.renew_lease(lease, 0.3)
    time.sleep(0.5)
    second = db.try_lease("cluster/c1", purpose="second", ttl=30)
    assert second is not None
    assert db.renew_lease(lease, 30) is False  # the first holder learns it lost the lease
    db.release_lease(lease)  # and its release leaves the new holder's lease alone
    assert db.get_lease("cluster/c1") == second


def test_a_lease_of_a_dead_process_on_this_host_is_free_at_once(db, skyform_home):
    script = (
        "from skyform.state.db import open_state\n"
        "db = open_state()\n"
        "assert db.try_lease('cluster/c1', purpose='held', ttl=3600)\n"
    )
    env = dict(os.environ, SKYFORM_HOME=str(skyform_home))
    subprocess.run([sys.executable, "-c", script], env=env, check=True)
    assert db.try_lease("cluster/c1", purpose="mine", ttl=30) is not None


def test_force_unlock_drops_a_live_lease(db):
    lease = db.try_lease("cluster/c1", purpose="stuck", ttl=3600)
    assert lease is not None
    dropped = db.force_unlock("cluster/c1")
    assert dropped == lease
    assert db.force_unlock("cluster/c1") is None
    assert db.renew_lease(lease, 30) is False


def test_managed_jobs_and_buckets_round_trip(db):
    jobs = ManagedJobs(db)
    made = jobs.create(
        ManagedJobRecord(
            id=0,
            name="train",
            task_file="/t.yaml",
            tasks=[ManagedTask(index=0, name="t", cluster="c1")],
            submitted_at=1.5,
        )
    )
    assert made.id >= 1 and jobs.require(made.id) == made
    revisions = Revisions(db)
    revisions.add(job_owner(made.id), kind="launch", reason="launch", body=b"{}")
    assert [r.revision for r in revisions.list(job_owner(made.id))] == [1]
    jobs.delete(made.id)
    assert jobs.get(made.id) is None and revisions.list(job_owner(made.id)) == []
    bucket = BucketRecord(name="data", store="s3", used_by=["c1"], created_at=2.25)
    put_bucket(db, bucket)
    assert get_bucket(db, "s3://data") == bucket and list_buckets(db) == [bucket]


def test_events_and_float_times_keep_their_precision(db):
    db.add_event("cluster.up", "up", cluster="c1", data={"serial": 3})
    (event,) = db.events(cluster="c1")
    assert event.kind == "cluster.up" and event.data == {"serial": 3}
    assert abs(event.ts - time.time()) < 5
    db.mark_preempted("h1", "injected")
    since = db.preempted_since(0)["h1"]
    assert abs(since - time.time()) < 5 and since != round(since)
