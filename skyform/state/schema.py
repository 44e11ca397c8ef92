"""State database schema, as numbered migrations. Append a version; never edit an old one.

Written in SQLite's words; PostgreSQL runs the same statements through postgres.py's
`_ddl` (AUTOINCREMENT keys become identity columns, REAL becomes DOUBLE PRECISION).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from typing import Any

from skyform.digests import sha256

SCHEMA_VERSION = 9

# A step is a statement, or a function of the migrating transaction (rows a statement
# cannot move the same way on both databases: JSON, digests).
Step = str | Callable[[Any], None]


def _one_revision_table(conn: Any) -> None:
    """Schema 9: every plan revision of both kinds into `revisions`, numbers and times kept.
    A managed job's: kind `launch` for its launch plan, `recovery` for each re-plan (the
    reason says which), its plan bytes as the body (None: made before schema 6, in its file
    only). A service's: its ServiceRevision JSON as the body, the reason read from it."""
    rows = []
    for r in conn.execute("SELECT * FROM plan_revisions").fetchall():
        kind = "launch" if r["reason"] == "launch" else "recovery"
        rows.append((f"managed/{r['job_id']}", r["revision"], r["created_at"], kind,
                     r["reason"], r["digest"], r["path"], r["plan"]))  # fmt: skip
    for r in conn.execute("SELECT * FROM service_revisions").fetchall():
        try:
            reason = json.loads(r["record"]).get("reason")
        except (ValueError, AttributeError):
            reason = None  # a torn record is kept as it is (its readers skip it)
        rows.append((f"service/{r['service']}", r["revision"], r["created_at"], r["kind"],
                     reason if isinstance(reason, str) else "", sha256(r["record"]), None,
                     r["record"]))  # fmt: skip
    if rows:
        conn.executemany(
            "INSERT INTO revisions (owner, revision, created_at, kind, reason, digest, path, "
            "body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


MIGRATIONS: dict[int, list[Step]] = {
    1: [
        # One row per cluster; `record` is a ClusterRecord as JSON (spec, handle, prices).
        """CREATE TABLE clusters (
            name TEXT PRIMARY KEY,
            status TEXT NOT NULL,
            record TEXT NOT NULL,
            updated_at REAL NOT NULL
        )""",
        # Nodes by engine id; the primary key is what stops two clusters claiming one host.
        """CREATE TABLE nodes (
            node_id TEXT PRIMARY KEY,
            cluster TEXT NOT NULL,
            rank INTEGER NOT NULL,
            host TEXT NOT NULL,
            port INTEGER NOT NULL,
            status TEXT NOT NULL
        )""",
        "CREATE INDEX nodes_by_cluster ON nodes (cluster)",
        # Job ids handed out per cluster incarnation (never reused until the cluster is deleted).
        """CREATE TABLE job_ids (
            cluster TEXT NOT NULL,
            job_id INTEGER NOT NULL,
            PRIMARY KEY (cluster, job_id)
        )""",
        """CREATE TABLE jobs (
            cluster TEXT NOT NULL,
            job_id INTEGER NOT NULL,
            status TEXT NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (cluster, job_id)
        )""",
        """CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            ts REAL NOT NULL,
            kind TEXT NOT NULL,
            cluster TEXT,
            job_id INTEGER,
            message TEXT NOT NULL,
            data TEXT NOT NULL DEFAULT '{}'
        )""",
        "CREATE INDEX events_by_cluster ON events (cluster, id)",
        # Stretches of uptime at the price recorded when the cluster was applied.
        """CREATE TABLE usage (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            cluster TEXT NOT NULL,
            offer TEXT NOT NULL,
            num_nodes INTEGER NOT NULL,
            hourly_price REAL NOT NULL,
            started_at REAL NOT NULL,
            ended_at REAL,
            managed_job_id INTEGER,
            reason TEXT
        )""",
    ],
    2: [
        # Managed jobs: `record` is a ManagedJobRecord as JSON (tasks, counters, controller).
        """CREATE TABLE managed_jobs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            status TEXT NOT NULL,
            record TEXT NOT NULL,
            updated_at REAL NOT NULL
        )""",
        # Every plan a managed job applied: revision 1 at launch, one more per recovery.
        """CREATE TABLE plan_revisions (
            job_id INTEGER NOT NULL,
            revision INTEGER NOT NULL,
            created_at REAL NOT NULL,
            reason TEXT NOT NULL,
            path TEXT NOT NULL,
            digest TEXT NOT NULL,
            PRIMARY KEY (job_id, revision)
        )""",
        # Hosts a fault injection (or a detected preemption) took away, for a cool-down.
        """CREATE TABLE preempted_hosts (
            node_id TEXT PRIMARY KEY,
            since REAL NOT NULL,
            reason TEXT NOT NULL
        )""",
    ],
    3: [
        # The state serial at each cluster's last change (create, update, status, delete),
        # kept after a delete: a plan is stale only when a cluster it touches changed after
        # the serial it was made at, so plans for other clusters apply side by side.
        """CREATE TABLE cluster_versions (
            name TEXT PRIMARY KEY,
            serial INTEGER NOT NULL
        )""",
        # clusters from before this table: changed "now", so older plans for them are stale
        """INSERT INTO cluster_versions (name, serial)
            SELECT name, (SELECT CAST(value AS INTEGER) FROM meta WHERE key='serial')
            FROM clusters""",
    ],
    4: [
        # Buckets skyform created (only those: it never deletes one it did not create);
        # `record` is a BucketRecord as JSON. `uri` is s3://name, gs://name or r2://name.
        """CREATE TABLE buckets (
            uri TEXT PRIMARY KEY,
            record TEXT NOT NULL,
            updated_at REAL NOT NULL
        )""",
    ],
    5: [
        # Leases: who holds a cluster (or a managed job, a controller) and until when. The
        # holder renews `expires_at` while it works; a holder that died frees it at expiry
        # (on its own host at once: its pid is gone). `token` tells a holder its own lease.
        """CREATE TABLE leases (
            name TEXT PRIMARY KEY,
            token TEXT NOT NULL,
            owner TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            purpose TEXT NOT NULL,
            acquired_at REAL NOT NULL,
            expires_at REAL NOT NULL
        )""",
        # who made each cluster's last change, when and with which command (stale-plan errors)
        "ALTER TABLE cluster_versions ADD COLUMN changed_by TEXT",
        "ALTER TABLE cluster_versions ADD COLUMN changed_at REAL",
        "ALTER TABLE cluster_versions ADD COLUMN command TEXT",
        # Secrets the store holds (cluster SSH keys), encrypted with SKYFORM_PASSPHRASE, and
        # the host keys every teammate trusts.
        """CREATE TABLE secrets (
            name TEXT PRIMARY KEY,
            ciphertext TEXT NOT NULL,
            updated_at REAL NOT NULL
        )""",
        """CREATE TABLE known_hosts (
            host TEXT NOT NULL,
            port INTEGER NOT NULL,
            key_type TEXT NOT NULL,
            key TEXT NOT NULL,
            PRIMARY KEY (host, port, key_type)
        )""",
    ],
    6: [
        # A managed job's inputs, so a controller with another SKYFORM_HOME (another machine)
        # can run and recover it: the task file's bytes and the launch's --env / --secret
        # values and resource flags, sealed as one with SKYFORM_PASSPHRASE (the task file may
        # hold secrets too); `task_digest` is the sha256 of the task bytes, checked on read.
        """CREATE TABLE managed_inputs (
            job_id INTEGER PRIMARY KEY,
            task_digest TEXT NOT NULL,
            sealed TEXT NOT NULL,
            updated_at REAL NOT NULL
        )""",
        # each plan revision's bytes (plans hold no secrets), checked against `digest` on read
        "ALTER TABLE plan_revisions ADD COLUMN plan TEXT",
        # A managed job's output in the store, so `jobs logs` works on any machine: chunks of
        # one node's log of one attempt (task, recovery, cluster job, rank), `offset` the
        # chunk's first byte in that log, `sealed` its bytes sealed with SKYFORM_PASSPHRASE
        # (output may echo secrets). `id` orders the chunks for a follower.
        """CREATE TABLE managed_logs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            job_id INTEGER NOT NULL,
            task INTEGER NOT NULL,
            recovery INTEGER NOT NULL,
            cluster_job INTEGER NOT NULL,
            rank INTEGER NOT NULL,
            byte_offset INTEGER NOT NULL,
            nbytes INTEGER NOT NULL,
            sealed TEXT NOT NULL,
            UNIQUE (job_id, task, recovery, cluster_job, rank, byte_offset)
        )""",
        "CREATE INDEX managed_logs_by_job ON managed_logs (job_id, id)",
    ],
    7: [
        # Fencing tokens (fencing.py): each time the lease `name` is taken anew its token
        # goes up, and never down (the row outlives the lease), so the writes of a holder
        # that lost its lease without knowing it (a managed job's controller) are refused.
        """CREATE TABLE fences (
            name TEXT PRIMARY KEY,
            fence INTEGER NOT NULL
        )""",
        # the fencing token the lease's holder got when it took it
        "ALTER TABLE leases ADD COLUMN fence INTEGER NOT NULL DEFAULT 0",
    ],
    8: [
        # Services (state/services.py): one row each. `name` is the key, so two homes
        # creating one service cannot both win; `owner` (user@host) made it, `home` is the
        # SKYFORM_HOME (on `host`) whose controller runs it and keeps its logs and the load
        # balancer's files (the controller claims it when it starts or adopts the service);
        # `record` is the serve ServiceRecord as JSON without its replicas; `endpoint` the
        # load balancer's address. Whether a controller runs is its lease `service/<name>`.
        """CREATE TABLE services (
            name TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            host TEXT NOT NULL,
            home TEXT NOT NULL,
            status TEXT NOT NULL,
            endpoint TEXT,
            record TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )""",
        # its replicas: `record` a ReplicaRecord as JSON
        """CREATE TABLE service_replicas (
            service TEXT NOT NULL,
            replica_id INTEGER NOT NULL,
            status TEXT NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (service, replica_id)
        )""",
        # what each version is made from (a VersionRecord as JSON: never a secret value)
        """CREATE TABLE service_versions (
            service TEXT NOT NULL,
            number INTEGER NOT NULL,
            record TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (service, number)
        )""",
        # its plan revisions (a ServiceRevision as JSON), one per decision
        """CREATE TABLE service_revisions (
            service TEXT NOT NULL,
            revision INTEGER NOT NULL,
            created_at REAL NOT NULL,
            kind TEXT NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (service, revision)
        )""",
        # Requests to a service's controller from any home (update, terminate a replica,
        # down): the controller polls them and writes `answer` (JSON). A payload with
        # secrets holds them sealed, never in clear.
        """CREATE TABLE service_requests (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            service TEXT NOT NULL,
            op TEXT NOT NULL,
            payload TEXT NOT NULL,
            asked_by TEXT NOT NULL,
            asked_at REAL NOT NULL,
            answer TEXT,
            answered_at REAL
        )""",
        "CREATE INDEX service_requests_by_service ON service_requests (service, id)",
        # The load balancer's traffic as a time series: one row per service per window
        # (`window_start`, `window_seconds` long), from the LB's counters: requests, 5xx
        # answers among them, latency percentiles in milliseconds (None: no request).
        """CREATE TABLE service_stats (
            service TEXT NOT NULL,
            window_start REAL NOT NULL,
            window_seconds REAL NOT NULL,
            requests INTEGER NOT NULL,
            errors INTEGER NOT NULL,
            p50_ms REAL,
            p95_ms REAL,
            PRIMARY KEY (service, window_start)
        )""",
    ],
    9: [
        # One table for the plan revisions of managed jobs and services (state/revisions.py):
        # `owner` is the work's lease name (managed/<id>, service/<name>), `revision` its
        # number 1, 2, ... per owner, `kind` what made it in its kind's words (launch,
        # recovery; up, scale, preemption, ...), `body` what was decided (a plan's bytes, a
        # replica set as JSON; NULL for a plan kept only in its file by an older skyform),
        # `digest` the body's sha256, `path` the file a plan revision was saved to as well.
        """CREATE TABLE revisions (
            owner TEXT NOT NULL,
            revision INTEGER NOT NULL,
            created_at REAL NOT NULL,
            kind TEXT NOT NULL,
            reason TEXT NOT NULL,
            digest TEXT NOT NULL,
            body TEXT,
            path TEXT,
            PRIMARY KEY (owner, revision)
        )""",
        _one_revision_table,
        "DROP TABLE plan_revisions",
        "DROP TABLE service_revisions",
    ],
}


# -- what the tables hold (state/checked.py checks every row read against it) ----------------

NUMBER, TEXT = "number", "text"
_TYPES = {"INTEGER": NUMBER, "REAL": NUMBER, "TEXT": TEXT}
_CREATE = re.compile(r"CREATE TABLE (\w+)\s*\((.*)\)\s*$", re.S)
_ALTER = re.compile(r"ALTER TABLE (\w+) ADD COLUMN (\w+) (\w+)")
_DROP = re.compile(r"DROP TABLE (\w+)")


@cache
def schema_tables() -> dict[str, dict[str, str]]:
    """table -> column -> NUMBER | TEXT, as the migrations up to SCHEMA_VERSION make them
    (the `meta` table is sqlcore's own)."""
    tables: dict[str, dict[str, str]] = {"meta": {"key": TEXT, "value": TEXT}}
    for version in range(1, SCHEMA_VERSION + 1):
        for statement in MIGRATIONS[version]:
            if not isinstance(statement, str):
                continue  # moves rows: no table or column of its own
            created = _CREATE.match(statement.strip())
            if created:
                tables[created[1]] = _columns(created[2])
            altered = _ALTER.match(statement.strip())
            if altered:
                tables[altered[1]][altered[2]] = _TYPES[altered[3]]
            dropped = _DROP.match(statement.strip())
            if dropped:
                del tables[dropped[1]]
    return tables


def _columns(body: str) -> dict[str, str]:
    columns = {}
    for line in body.split(","):
        words = line.split()
        if len(words) >= 2 and words[1] in _TYPES:
            columns[words[0]] = _TYPES[words[1]]
    return columns


@cache
def column_kinds() -> dict[str, str]:
    """column name -> what it holds, in every table (one name, one meaning)."""
    kinds: dict[str, str] = {}
    for columns in schema_tables().values():
        kinds.update(columns)
    return kinds
