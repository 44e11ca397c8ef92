"""`skyform storage ls` and `skyform storage delete`: the buckets skyform created.

SkyPilot's `sky storage ls` lists only the buckets it manages; so does this. `delete` takes
names or globs (or all), refuses a bucket a live cluster uses, and never touches a bucket
skyform did not create (it is not in state, so it is not found).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from skyform.config import Config
from skyform.errors import SkyformError
from skyform.state.buckets import BucketRecord, list_buckets
from skyform.state.db import StateDB
from skyform.storage.cleanup import delete_bucket


@dataclass(frozen=True)
class BucketRow:
    name: str
    store: str
    region: str | None
    persistent: bool
    used_by: list[str]  # live clusters only
    created_by_skyform: bool = True
    size_gb: float | None = None

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "store": self.store,
            "region": self.region,
            "persistent": self.persistent,
            "created_by_skyform": self.created_by_skyform,
            "used_by": self.used_by,
            "size_gb": self.size_gb,
        }


def bucket_rows(db: StateDB, config: Config, *, sizes: bool = False) -> list[BucketRow]:
    live = {c.name for c in db.list_clusters()}
    rows = []
    for record in list_buckets(db):
        size = None
        if sizes:
            from skyform.storage.client import client_for

            try:
                size = client_for(record.store, config.storage).read(record.name).size_gb
            except SkyformError:
                size = None
        rows.append(
            BucketRow(
                name=record.name,
                store=record.store,
                region=record.region,
                persistent=record.persistent,
                used_by=sorted(live & set(record.used_by)),
                size_gb=size,
            )
        )
    return rows


def select(db: StateDB, patterns: list[str], *, every: bool) -> list[BucketRecord]:
    """The recorded buckets named (names or globs), or all of them; unknown names are an
    error, as in SkyPilot ("Storage name '<n>' not found")."""
    if every and patterns:
        raise SkyformError("name buckets or pass -a/--all, not both")
    if not every and not patterns:
        raise SkyformError("say which buckets to delete", "Name them, or pass -a/--all.")
    records = list_buckets(db)
    if every:
        return records
    chosen: dict[str, BucketRecord] = {}
    for pattern in patterns:
        found = [r for r in records if fnmatch.fnmatchcase(r.name, pattern)]
        if not found:
            raise SkyformError(
                f"bucket '{pattern}' not found among the buckets skyform created",
                "`skyform storage ls` lists them; skyform never deletes a bucket it did not "
                "create.",
            )
        chosen.update({r.uri: r for r in found})
    return list(chosen.values())


def refuse_in_use(db: StateDB, records: list[BucketRecord]) -> None:
    live = {c.name for c in db.list_clusters()}
    for record in records:
        users = sorted(live & set(record.used_by))
        if users:
            raise SkyformError(
                f"bucket {record.name} is used by {', '.join(users)}",
                f"Tear {'it' if len(users) == 1 else 'them'} down first: skyform down "
                + " ".join(users),
            )


def delete_buckets(db: StateDB, config: Config, records: list[BucketRecord]) -> list[str]:
    refuse_in_use(db, records)
    return [delete_bucket(db, config, r) for r in records]


# --- the verbs, on this machine's state -----------------------------------------------------


def list_storage(*, sizes: bool) -> list[BucketRow]:
    """`skyform storage ls [--size]`."""
    from skyform.config import load_config
    from skyform.state.db import open_state

    with open_state() as db:
        return bucket_rows(db, load_config(), sizes=sizes)


def storage_to_delete(patterns: list[str], *, every: bool) -> list[BucketRecord]:
    """What `skyform storage delete` would delete, checked before it asks: the buckets named
    (or all), none a live cluster uses."""
    from skyform.state.db import open_state

    with open_state() as db:
        records = select(db, patterns, every=every)
        if records:
            refuse_in_use(db, records)
        return records


def delete_storage(records: list[BucketRecord]) -> list[str]:
    """Delete them with their objects (checked again); one line per bucket, what was done."""
    from skyform.config import load_config
    from skyform.state.db import open_state

    with open_state() as db:
        return delete_buckets(db, load_config(), records)
