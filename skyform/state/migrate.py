"""Moving state between stores: `skyform state migrate --to URL` (SQLite <-> PostgreSQL).

Every table is copied row for row in one transaction of the target, lineage and serial
included, so plans made against the old store stay fresh against the new one. Leases are
not copied (they belong to running processes); their fencing tokens are. A target that
holds anything already is refused: migrating never merges two states or overwrites one.
"""

from __future__ import annotations

from skyform.errors import StateError
from skyform.state.services import SERVICE_TABLES
from skyform.state.sql import SqlStateStore

# Schema 9's tables, in the order they were added; `meta` is handled on its own.
TABLES = (
    "clusters",
    "nodes",
    "job_ids",
    "jobs",
    "events",
    "usage",
    "managed_jobs",
    "preempted_hosts",
    "cluster_versions",
    "buckets",
    "secrets",
    "known_hosts",
    "managed_inputs",
    "managed_logs",
    "fences",  # tokens only go up: a store migrated to keeps refusing stale holders
    *SERVICE_TABLES,
    "revisions",  # both kinds' plan revisions
)


def row_counts(store: SqlStateStore) -> dict[str, int]:
    return {
        table: int(store.execute(f"SELECT COUNT(*) AS n FROM {table}").fetchone()["n"])
        for table in TABLES
    }


def copy_state(source: SqlStateStore, target: SqlStateStore) -> dict[str, int]:
    """Copy `source` into the empty `target`; returns the rows copied per table."""
    if source.url == target.url:
        raise StateError(f"the state is already in {target.url}", "Name another URL with --to.")
    held = {t: n for t, n in row_counts(target).items() if n}
    if held or target.serial:
        listed = ", ".join(f"{n} {t}" for t, n in held.items()) or f"serial {target.serial}"
        raise StateError(
            f"the target store {target.url} is not empty ({listed}); migrating never merges "
            "or overwrites a state",
            "Migrate into a new, empty database (or SQLite file).",
        )
    copied: dict[str, int] = {}
    with target.transaction() as conn:
        for table in TABLES:
            rows = [dict(r) for r in source.execute(f"SELECT * FROM {table}").fetchall()]
            copied[table] = len(rows)
            if not rows:
                continue
            columns = list(rows[0])
            conn.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' for _ in columns)})",
                [[row[c] for c in columns] for row in rows],
            )
        for key in ("lineage", "serial"):
            conn.execute("UPDATE meta SET value=? WHERE key=?", (source._meta(key), key))
        target.after_bulk_insert(conn, TABLES)
    return copied
