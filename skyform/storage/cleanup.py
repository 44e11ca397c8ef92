"""Deleting buckets: the `persistent: false` ones at `down` (SkyPilot leaks them, its #1280)
and the ones `skyform storage delete` names. Only buckets skyform created (state knows them)
are ever deleted; one a live cluster still uses is kept."""

from __future__ import annotations

from collections.abc import Callable

from skyform.config import Config
from skyform.errors import StorageError
from skyform.state.buckets import BucketRecord, forget_bucket, release_cluster
from skyform.state.db import StateDB
from skyform.storage.client import client_for


def _quiet(message: str) -> None:
    pass


def delete_bucket(
    db: StateDB, config: Config, record: BucketRecord, emit: Callable[[str], None] = _quiet
) -> str:
    """Empty and delete a bucket skyform created, then forget it; what happened, in words.
    One a Pulumi storage stack made goes by destroying that stack (unprotected first)."""
    if record.storage_stack:
        from skyform.plan.model import PlannedBucket
        from skyform.stacks.pulumi.storage import StorageStacks

        planned = PlannedBucket(
            name=record.name, store=record.store, region=record.region, used_by=record.used_by
        )
        gone = not StorageStacks(config).destroy(planned, emit)
        forget_bucket(db, record.uri)
        return f"bucket {record.uri} " + (
            "had no storage stack left"
            if gone
            else f"deleted with its stack {record.storage_stack}"
        )
    gone = not client_for(record.store, config.storage).delete(record.name)
    forget_bucket(db, record.uri)
    return f"bucket {record.uri} " + ("was already gone" if gone else "deleted")


def delete_ephemeral(
    db: StateDB, config: Config, cluster: str, emit: Callable[[str], None]
) -> None:
    """At `down`: delete the cluster's `persistent: false` buckets no other cluster uses."""
    live = {c.name for c in db.list_clusters()} - {cluster}
    for record in release_cluster(db, cluster):
        others = sorted(live & set(record.used_by))
        if record.persistent:
            continue
        if others:
            emit(f"bucket {record.uri} kept: {', '.join(others)} still use it")
            continue
        try:
            emit(delete_bucket(db, config, record, emit))
        except StorageError as exc:
            emit(f"bucket {record.uri} not deleted: {exc.message}")
