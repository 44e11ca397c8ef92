"""skyform's state: one SQLite database under SKYFORM_HOME, in WAL mode, schema-versioned.

Like Terraform state it has a lineage (fixed when the database is created) and a serial
bumped by every change to the set of clusters (create, update, status, delete); each cluster
also keeps the serial of its own last change. Plans record lineage and serial; apply refuses
a plan when a cluster it touches changed after that serial (or the state was recreated).
Job status changes and events do not bump the serial: a job finishing does not make a
reviewed plan stale.

Every write runs in a BEGIN IMMEDIATE transaction, so concurrent skyform processes serialize
on the database instead of interleaving half-done updates.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skyform import __version__
from skyform.config import ensure_dir
from skyform.errors import StateError
from skyform.paths import state_path
from skyform.plan.model import PlacedOffer
from skyform.state.models import (
    ClusterRecord,
    ClusterStatus,
    Event,
    JobRecord,
    NodeHandle,
    UsageInterval,
)
from skyform.state.records import dump_record, load_record, load_value
from skyform.state.schema import MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_MS = 10_000


class StateDB:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        ensure_dir(self.path.parent)
        fresh = not self.path.exists()
        if fresh:
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            self._conn.row_factory = sqlite3.Row
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except StateError:
            self._conn.close()
            raise
        except sqlite3.DatabaseError as exc:
            raise StateError(
                f"cannot open the state database {self.path}: {exc}",
                "If it is corrupt, move it aside; `skyform status` will start a new one "
                "(clusters it knew about must then be cleaned up by hand).",
            ) from None
        for suffix in ("", "-wal", "-shm"):
            sidecar = Path(f"{self.path}{suffix}")
            if sidecar.exists():
                os.chmod(sidecar, 0o600)

    # -- plumbing ----------------------------------------------------------------------------

    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn
        if conn.in_transaction:  # nested: join the outer transaction
            yield conn
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _migrate(self) -> None:
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            current = int(row["value"]) if row else 0
            if current > SCHEMA_VERSION:
                raise self._too_new(conn, current)
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    conn.execute(statement)
            conn.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [("schema_version", str(SCHEMA_VERSION)), ("skyform_version", __version__)],
            )
            if not conn.execute("SELECT 1 FROM meta WHERE key='lineage'").fetchone():
                conn.execute("INSERT INTO meta VALUES ('lineage', ?)", (str(uuid.uuid4()),))
                conn.execute("INSERT INTO meta VALUES ('serial', '0')")

    def _too_new(self, conn: sqlite3.Connection, schema: int) -> StateError:
        """An older skyform must not touch tables it does not know: refuse, saying both."""
        row = conn.execute("SELECT value FROM meta WHERE key='skyform_version'").fetchone()
        writer = f"skyform {row['value']}" if row else "a newer skyform"
        return StateError(
            f"the state in {self.path} was written by {writer} (state schema {schema}); "
            f"this skyform ({__version__}) knows state schema {SCHEMA_VERSION} at most",
            "Upgrade skyform (pip install -U skyform) to use this state, or point "
            "SKYFORM_HOME at another directory for this version.",
        )

    def _meta(self, key: str) -> str:
        return self._conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()["value"]

    def _bump(self, conn: sqlite3.Connection, cluster: str) -> None:
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='serial'")
        conn.execute(
            "INSERT INTO cluster_versions (name, serial) SELECT ?, CAST(value AS INTEGER) "
            "FROM meta WHERE key='serial' ON CONFLICT(name) DO UPDATE SET serial=excluded.serial",
            (cluster,),
        )

    def cluster_version(self, name: str) -> int:
        """The serial at the cluster's last change (0: it never existed in this state)."""
        row = self._conn.execute(
            "SELECT serial FROM cluster_versions WHERE name=?", (name,)
        ).fetchone()
        return int(row["serial"]) if row else 0

    @property
    def lineage(self) -> str:
        return self._meta("lineage")

    @property
    def serial(self) -> int:
        return int(self._meta("serial"))

    @property
    def schema_version(self) -> int:
        return int(self._meta("schema_version"))

    # -- clusters ----------------------------------------------------------------------------

    def get_cluster(self, name: str) -> ClusterRecord | None:
        row = self._conn.execute("SELECT record FROM clusters WHERE name=?", (name,)).fetchone()
        return _cluster(row["record"], name) if row else None

    def require_cluster(self, name: str) -> ClusterRecord:
        record = self.get_cluster(name)
        if record is None:
            known = ", ".join(c.name for c in self.list_clusters()) or "none"
            raise StateError(
                f"no cluster named {name!r} (clusters: {known})", "See them with: skyform status"
            )
        return record

    def list_clusters(self) -> list[ClusterRecord]:
        rows = self._conn.execute("SELECT name, record FROM clusters ORDER BY name").fetchall()
        return [_cluster(r["record"], r["name"]) for r in rows]

    def put_cluster(self, record: ClusterRecord) -> None:
        """Insert or replace a cluster and its nodes; bumps the serial."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO clusters (name, status, record, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET status=excluded.status, "
                "record=excluded.record, updated_at=excluded.updated_at",
                (record.name, record.status.value, dump_record(record), time.time()),
            )
            conn.execute("DELETE FROM nodes WHERE cluster=?", (record.name,))
            for node in record.handle.nodes if record.handle else []:
                self._insert_node(conn, record.name, node)
            self._bump(conn, record.name)

    def set_cluster_status(self, name: str, status: ClusterStatus) -> None:
        record = self.get_cluster(name)
        if record is None:
            raise StateError(f"no cluster named {name!r} in state")
        self.put_cluster(record.model_copy(update={"status": status}))

    def delete_cluster(self, name: str) -> None:
        """Forget a cluster with its jobs: a new cluster of the same name is a new
        incarnation whose job ids start at 1 again, as SkyPilot's do (the job table lives
        with the cluster). Events and usage stay for the record."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM nodes WHERE cluster=?", (name,))
            conn.execute("DELETE FROM clusters WHERE name=?", (name,))
            conn.execute("DELETE FROM jobs WHERE cluster=?", (name,))
            conn.execute("DELETE FROM job_ids WHERE cluster=?", (name,))
            self._bump(conn, name)

    # -- nodes and host reservations ---------------------------------------------------------

    def _insert_node(self, conn: sqlite3.Connection, cluster: str, node: NodeHandle) -> None:
        try:
            conn.execute(
                "INSERT INTO nodes (node_id, cluster, rank, host, port, status) "
                "VALUES (?, ?, ?, ?, ?, 'UP')",
                (node.node_id, cluster, node.rank, node.host, node.port),
            )
        except sqlite3.IntegrityError:
            owner = self.node_owner(node.node_id)
            raise StateError(
                f"node {node.node_id} is already part of cluster {owner!r}",
                f"Take {owner!r} down first: skyform down {owner}",
            ) from None

    def node_owner(self, node_id: str) -> str | None:
        row = self._conn.execute("SELECT cluster FROM nodes WHERE node_id=?", (node_id,)).fetchone()
        return row["cluster"] if row else None

    def reserve_nodes(self, cluster: str, node_ids: list[str]) -> None:
        """Claim hosts for a cluster before it is recorded (ssh pools); all or nothing."""
        with self.transaction() as conn:
            for rank, node_id in enumerate(node_ids):
                owner = self.node_owner(node_id)
                if owner is not None and owner != cluster:
                    raise StateError(f"node {node_id} is already part of cluster {owner!r}")
                conn.execute(
                    "INSERT OR REPLACE INTO nodes (node_id, cluster, rank, host, port, status) "
                    "VALUES (?, ?, ?, '', 0, 'RESERVED')",
                    (node_id, cluster, rank),
                )

    def taken_nodes(self) -> dict[str, str]:
        rows = self._conn.execute("SELECT node_id, cluster FROM nodes").fetchall()
        return {r["node_id"]: r["cluster"] for r in rows}

    def release_nodes(self, cluster: str, node_ids: list[str] | None = None) -> None:
        """Release the cluster's hosts (only `node_ids`, when given)."""
        with self.transaction() as conn:
            if node_ids is None:
                conn.execute("DELETE FROM nodes WHERE cluster=?", (cluster,))
            for node_id in node_ids or []:
                conn.execute("DELETE FROM nodes WHERE cluster=? AND node_id=?", (cluster, node_id))

    # -- hosts taken away by a preemption (real or injected), for a cool-down --------------------

    def mark_preempted(self, node_id: str, reason: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO preempted_hosts VALUES (?, ?, ?)",
                (node_id, time.time(), reason),
            )

    def clear_preempted(self, node_ids: list[str]) -> None:
        """Hosts handed to a new cluster: their old preemption is not this cluster's."""
        with self.transaction() as conn:
            conn.executemany(
                "DELETE FROM preempted_hosts WHERE node_id=?", [(i,) for i in node_ids]
            )

    def preempted_since(self, cutoff: float) -> dict[str, float]:
        """node_id -> when it was preempted, for marks newer than `cutoff`."""
        rows = self._conn.execute(
            "SELECT node_id, since FROM preempted_hosts WHERE since>=?", (cutoff,)
        ).fetchall()
        return {r["node_id"]: r["since"] for r in rows}

    # -- jobs --------------------------------------------------------------------------------

    def next_job_id(self, cluster: str) -> int:
        """1, 2, 3 ... for each incarnation of the cluster (never reused within one)."""
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT COALESCE(MAX(job_id), 0) + 1 AS n FROM job_ids WHERE cluster=?", (cluster,)
            ).fetchone()
            conn.execute("INSERT INTO job_ids (cluster, job_id) VALUES (?, ?)", (cluster, row["n"]))
            return int(row["n"])

    def put_job(self, job: JobRecord) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO jobs (cluster, job_id, status, record) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(cluster, job_id) DO UPDATE SET status=excluded.status, "
                "record=excluded.record",
                (job.cluster, job.job_id, job.status.value, dump_record(job)),
            )

    def get_job(self, cluster: str, job_id: int) -> JobRecord | None:
        row = self._conn.execute(
            "SELECT record FROM jobs WHERE cluster=? AND job_id=?", (cluster, job_id)
        ).fetchone()
        return _job(row["record"], cluster, job_id) if row else None

    def list_jobs(self, cluster: str | None = None) -> list[JobRecord]:
        sql = "SELECT cluster, job_id, record FROM jobs"
        args: tuple[str, ...] = ()
        if cluster is not None:
            sql, args = sql + " WHERE cluster=?", (cluster,)
        rows = self._conn.execute(sql + " ORDER BY cluster, job_id", args).fetchall()
        return [_job(r["record"], r["cluster"], r["job_id"]) for r in rows]

    def latest_job(self, cluster: str) -> JobRecord | None:
        jobs = self.list_jobs(cluster)
        return jobs[-1] if jobs else None

    # -- events ------------------------------------------------------------------------------

    def add_event(
        self,
        kind: str,
        message: str,
        *,
        cluster: str | None = None,
        job_id: int | None = None,
        data: dict | None = None,
    ) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO events (ts, kind, cluster, job_id, message, data) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (time.time(), kind, cluster, job_id, message, json.dumps(data or {})),
            )

    def events(self, *, cluster: str | None = None, since: float | None = None) -> list[Event]:
        sql = "SELECT * FROM events WHERE 1=1"
        args: list[str | float] = []
        if cluster is not None:
            sql += " AND cluster=?"
            args.append(cluster)
        if since is not None:
            sql += " AND ts>=?"
            args.append(since)
        rows = self._conn.execute(sql + " ORDER BY id", args).fetchall()
        return [
            Event(
                id=r["id"],
                ts=r["ts"],
                kind=r["kind"],
                cluster=r["cluster"],
                job_id=r["job_id"],
                message=r["message"],
                data=json.loads(r["data"]),
            )
            for r in rows
        ]

    # -- usage intervals (cost report) -------------------------------------------------------

    def open_usage(
        self,
        record: ClusterRecord,
        *,
        managed_job_id: int | None = None,
        reason: str = "",
        started_at: float | None = None,
    ) -> int:
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO usage (cluster, offer, num_nodes, hourly_price, started_at, "
                "managed_job_id, reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    record.name,
                    record.spec.offer.model_dump_json(),
                    record.spec.num_nodes,
                    record.hourly_price,
                    started_at or time.time(),
                    managed_job_id,
                    reason,
                ),
            )
            return int(cur.lastrowid or 0)

    def close_usage(self, cluster: str, *, ended_at: float | None = None) -> None:
        with self.transaction() as conn:
            conn.execute(
                "UPDATE usage SET ended_at=? WHERE cluster=? AND ended_at IS NULL",
                (ended_at or time.time(), cluster),
            )

    def usage(self, *, since: float | None = None) -> list[UsageInterval]:
        sql = "SELECT * FROM usage"
        args: tuple[float, ...] = ()
        if since is not None:
            sql, args = sql + " WHERE ended_at IS NULL OR ended_at>=?", (since,)
        rows = self._conn.execute(sql + " ORDER BY id", args).fetchall()
        return [
            UsageInterval(
                id=r["id"],
                cluster=r["cluster"],
                offer=load_value(
                    PlacedOffer, json.loads(r["offer"]), what=f"usage interval {r['id']}"
                ),
                num_nodes=r["num_nodes"],
                hourly_price=r["hourly_price"],
                started_at=r["started_at"],
                ended_at=r["ended_at"],
                managed_job_id=r["managed_job_id"],
                reason=r["reason"] or "",
            )
            for r in rows
        ]


def _cluster(text: str, name: str) -> ClusterRecord:
    return load_record(ClusterRecord, text, what=f"cluster {name!r}")


def _job(text: str, cluster: str, job_id: int) -> JobRecord:
    return load_record(JobRecord, text, what=f"job {job_id} of cluster {cluster!r}")


def open_state(path: Path | None = None) -> StateDB:
    return StateDB(path or state_path())
