"""Buckets skyform created, in state.db: what `storage ls` lists and `down` / `storage delete`
may delete. A bucket that is not recorded here was not made by skyform and is never deleted.

Recording a bucket does not bump the serial: a bucket appearing does not change any cluster,
and plans check the buckets they use themselves (lifecycle/freshness.py).
"""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict

from skyform.plan.model import STORE_SCHEMES
from skyform.state.db import StateDB
from skyform.state.records import dump_record, load_record


class BucketRecord(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")

    name: str
    store: str  # s3 | gcs | r2
    region: str | None = None
    endpoint: str | None = None  # an S3-compatible store's URL (never its keys)
    persistent: bool = True
    used_by: list[str] = []  # clusters whose file mounts use it
    created_at: float = 0.0
    task: str | None = None  # the task file that made it
    # made by its cluster's Pulumi stack (and deleted with it), not by skyform's own client
    stack_owned: bool = False
    # made by a Pulumi storage stack of its own (`<project>-storage/<store>-<name>`), deleted
    # by destroying that stack
    storage_stack: str | None = None
    # of the local sources skyform last uploaded into it (storage/sources.py)
    uploaded_digest: str | None = None

    @property
    def uri(self) -> str:
        return f"{STORE_SCHEMES.get(self.store, self.store)}://{self.name}"


def put_bucket(db: StateDB, record: BucketRecord) -> None:
    with db.transaction() as conn:
        conn.execute(
            "INSERT INTO buckets (uri, record, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(uri) DO UPDATE SET record=excluded.record, "
            "updated_at=excluded.updated_at",
            (record.uri, dump_record(record), time.time()),
        )


def get_bucket(db: StateDB, uri: str) -> BucketRecord | None:
    row = db.execute("SELECT record FROM buckets WHERE uri=?", (uri,)).fetchone()
    return (
        None
        if row is None
        else load_record(BucketRecord, row["record"], what=f"bucket {uri}", where=db.where)
    )


def list_buckets(db: StateDB) -> list[BucketRecord]:
    rows = db.execute("SELECT uri, record FROM buckets ORDER BY uri").fetchall()
    return [
        load_record(BucketRecord, r["record"], what=f"bucket {r['uri']}", where=db.where)
        for r in rows
    ]


def forget_bucket(db: StateDB, uri: str) -> None:
    with db.transaction() as conn:
        conn.execute("DELETE FROM buckets WHERE uri=?", (uri,))


def release_cluster(db: StateDB, cluster: str) -> list[BucketRecord]:
    """Drop `cluster` from every bucket's users; returns the buckets it used."""
    used = [b for b in list_buckets(db) if cluster in b.used_by]
    for bucket in used:
        put_bucket(
            db, bucket.model_copy(update={"used_by": [c for c in bucket.used_by if c != cluster]})
        )
    return used


def stack_buckets(db: StateDB, cluster: str) -> list[BucketRecord]:
    """The buckets `cluster`'s Pulumi stack makes (and deletes with the stack)."""
    return [b for b in list_buckets(db) if b.stack_owned and cluster in b.used_by]
