"""State database schema, as numbered migrations. Append a version; never edit an old one."""

from __future__ import annotations

SCHEMA_VERSION = 1

MIGRATIONS: dict[int, list[str]] = {
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
        # Job ids are never reused on a cluster, even after its job rows are deleted.
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
}
