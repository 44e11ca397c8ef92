"""`skyform state migrate --to URL`: SQLite -> PostgreSQL -> SQLite keeps every record,
lineage and serial (a reviewed plan stays fresh); a store that is not empty is refused."""

from __future__ import annotations

from skyform.plan.model import ClusterSpec, PlacedOffer
from skyform.state.db import open_state
from skyform.state.managed import ManagedJobRecord, ManagedJobs, ManagedTask
from skyform.state.models import ClusterRecord, ClusterStatus, JobRecord, JobStatus
from skyform.state.revisions import Revisions, job_owner, service_owner

OFFER = PlacedOffer(
    cloud="local", region="local", zone=None, instance_type="local", spot=False, hourly_price=0.0
)


def _fill() -> tuple[str, int]:
    with open_state() as db:
        for name in ("a", "b"):
            record = ClusterRecord(
                name=name,
                status=ClusterStatus.UP,
                spec=ClusterSpec(name=name, offer=OFFER, num_nodes=1),
                hourly_price=0.0,
            )
            db.put_cluster(record)
            db.open_usage(record, started_at=10.0)
        job = JobRecord(
            cluster="a",
            job_id=db.next_job_id("a"),
            name="j",
            task_id="t",
            status=JobStatus.SUCCEEDED,
            submitted_at=1.0,
        )
        db.put_job(job)
        db.add_event("cluster.up", "up", cluster="a")
        made = ManagedJobs(db).create(
            ManagedJobRecord(
                id=0,
                name="m",
                task_file="/t.yaml",
                tasks=[ManagedTask(index=0, name="t", cluster="a")],
                submitted_at=2.0,
            )
        )
        revisions = Revisions(db)  # plan revisions of both kinds, in the one table
        revisions.add(job_owner(made.id), kind="launch", reason="launch", body=b"{}")
        revisions.add(service_owner("web"), kind="up", reason="1 replica", body=b"[]")
        return db.lineage, db.serial


def _dump(url: str) -> dict:
    with open_state(url=url) as db:
        return {
            "lineage": db.lineage,
            "serial": db.serial,
            "clusters": db.list_clusters(),
            "jobs": db.list_jobs(),
            "events": db.events(),
            "usage": db.usage(),
            "managed": ManagedJobs(db).list(),
            "revisions": [(r, Revisions(db).body(r)) for r in Revisions(db).recent(10)],
            "versions": {n: db.cluster_version(n) for n in ("a", "b")},
        }


def test_state_moves_to_postgresql_and_back_with_everything_in_it(cli, pg_url, tmp_path):
    lineage, serial = _fill()
    with open_state() as db:
        source = db.url
    before = _dump(source)
    moved = cli("state", "migrate", "--to", pg_url)
    assert moved.exit_code == 0, moved.output
    assert f"to {pg_url}" in moved.stdout and "2 clusters" in moved.stdout
    assert _dump(pg_url) == before
    assert (before["lineage"], before["serial"]) == (lineage, serial)
    with open_state(url=pg_url) as db:  # counters continue after the copied rows
        db.add_event("after", "after the move")
        assert db.events()[-1].id == before["events"][-1].id + 1
    back = f"sqlite:///{tmp_path}/back/state.db"
    assert cli("state", "migrate", "--from", pg_url, "--to", back).exit_code == 0
    again = _dump(back)
    assert again["clusters"] == before["clusters"] and again["lineage"] == lineage
    assert again["revisions"] == before["revisions"] and len(before["revisions"]) == 2
    assert _dump(source) == before  # the old store is left as it was


def test_a_store_that_is_not_empty_is_refused_and_left_alone(cli, pg_url):
    _fill()
    assert cli("state", "migrate", "--to", pg_url).exit_code == 0
    target = _dump(pg_url)
    refused = cli("state", "migrate", "--to", pg_url)
    assert refused.exit_code == 1
    assert "is not empty (2 clusters" in refused.stderr
    assert "migrating never merges or overwrites a state" in refused.stderr
    assert _dump(pg_url) == target
