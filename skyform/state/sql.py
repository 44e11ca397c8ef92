"""skyform's state as SQL: one implementation of the StateStore contract (store.py) for both
databases — SQLite (sqlite.py, the embedded default) and PostgreSQL (postgres.py, team mode).
The two subclasses only open a connection and run the numbered migrations (schema.py);
every query below is plain SQL both understand (`?` placeholders, ON CONFLICT upserts,
RETURNING).

Like Terraform state it has a lineage (fixed when the database is created) and a serial
bumped by every change to the set of clusters (create, update, status, delete); each cluster
also keeps the serial of its own last change, and who made it, when, with which command.
Plans record lineage and serial; apply refuses a plan when a cluster it touches changed
after that serial (or the state was recreated). Job status changes and events do not bump
the serial: a job finishing does not make a reviewed plan stale.

Every write runs in a transaction that first takes the store's one write lock (SQLite's
BEGIN IMMEDIATE, a PostgreSQL transaction-scoped advisory lock), so concurrent skyform
processes serialize on the database instead of interleaving half-done updates: no lost
update, and no deadlock, since no transaction waits for a second lock while holding one.
"""

from __future__ import annotations

import json
import shlex
import time
from typing import TYPE_CHECKING

from skyform.errors import StateError
from skyform.state.journal import JournalMixin
from skyform.state.leases import LeaseMixin
from skyform.state.sqlcore import Conn

if TYPE_CHECKING:  # pydantic and the models load with the first record (status_rows: never)
    from skyform.state.models import ClusterRecord, ClusterStatus, JobRecord, NodeHandle
    from skyform.state.rows import ClusterRow


class SqlStateStore(LeaseMixin, JournalMixin):
    """The StateStore contract over SQL; sqlite.py and postgres.py open its connection."""

    # -- clusters ----------------------------------------------------------------------------

    def get_cluster(self, name: str) -> ClusterRecord | None:
        """The cluster `name` means: `my_cluster` (as typed with -c) is `my-cluster`."""
        from skyform.plan.naming import engine_name

        name = engine_name(name)
        row = self.execute("SELECT record FROM clusters WHERE name=?", (name,)).fetchone()
        if row is None:
            return None
        record = self._cluster(row["record"], name)
        if self.shares_keys:  # a teammate's cluster: its node keys come from the store
            from skyform.state.teamkeys import adopt

            record = adopt(self._conn, record)
        return record

    def require_cluster(self, name: str) -> ClusterRecord:
        record = self.get_cluster(name)
        if record is None:
            known = ", ".join(c.name for c in self.list_clusters()) or "none"
            raise StateError(
                f"no cluster named {name!r} (clusters: {known})", "See them with: skyform status"
            )
        return record

    def list_clusters(self) -> list[ClusterRecord]:
        rows = self.execute_tuples("SELECT name, record FROM clusters ORDER BY name")
        return [self._cluster(record, name) for name, record in rows]

    def shown_names(self) -> dict[str, str]:
        """Each cluster whose name as typed (`-c my_cluster`) is not its own, by its own:
        read without the models (every verb's messages ask; a record that cannot be read
        is left to the verb that reads it)."""
        from skyform.plan.naming import engine_name

        found = {}
        for name, text in self.execute_tuples("SELECT name, record FROM clusters"):
            try:
                shown = json.loads(text)["spec"].get("shown_as")
            except (ValueError, TypeError, KeyError, AttributeError):
                continue
            if isinstance(shown, str) and shown != name and engine_name(shown) == name:
                found[name] = shown
        return found

    def cluster_rows(self) -> list[ClusterRow] | None:
        """Every cluster as `status` prints it, read without the models; None when a record
        needs them (autostop to converge, a field not as this version writes it): then
        read `list_clusters`."""
        from skyform.state.rows import cluster_row

        rows = []
        for (text,) in self.execute_tuples("SELECT record FROM clusters ORDER BY name"):
            row = cluster_row(text)
            if row is None:
                return None
            rows.append(row)
        return rows

    def put_cluster(self, record: ClusterRecord) -> None:
        """Insert or replace a cluster and its nodes; bumps the serial."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO clusters (name, status, record, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET status=excluded.status, "
                "record=excluded.record, updated_at=excluded.updated_at",
                (record.name, record.status.value, _dump(record), time.time()),
            )
            conn.execute("DELETE FROM nodes WHERE cluster=?", (record.name,))
            for node in record.handle.nodes if record.handle else []:
                self._insert_node(conn, record.name, node)
            if self.shares_keys:
                from skyform.state.teamkeys import share

                share(conn, record, time.time())
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
            prefix = f"identity/{name}/"
            conn.execute("DELETE FROM secrets WHERE substr(name, 1, ?) = ?", (len(prefix), prefix))
            self._bump(conn, name)

    # -- nodes and host reservations ---------------------------------------------------------

    def _insert_node(self, conn: Conn, cluster: str, node: NodeHandle) -> None:
        # checked before the insert: a failed statement would end a PostgreSQL transaction
        owner = self.node_owner(node.node_id, conn)
        if owner is not None:
            raise StateError(
                f"node {node.node_id} is already part of cluster {owner!r}",
                f"Take {owner!r} down first: skyform down {owner}",
            )
        conn.execute(
            "INSERT INTO nodes (node_id, cluster, rank, host, port, status) "
            "VALUES (?, ?, ?, ?, ?, 'UP')",
            (node.node_id, cluster, node.rank, node.host, node.port),
        )

    def node_owner(self, node_id: str, conn: Conn | None = None) -> str | None:
        sql = "SELECT cluster FROM nodes WHERE node_id=?"
        row = (conn or self._conn).execute(sql, (node_id,)).fetchone()
        return row["cluster"] if row else None

    def reserve_nodes(self, cluster: str, node_ids: list[str]) -> None:
        """Claim hosts for a cluster before it is recorded (ssh pools); all or nothing."""
        with self.transaction() as conn:
            for rank, node_id in enumerate(node_ids):
                owner = self.node_owner(node_id, conn)
                if owner is not None and owner != cluster:
                    raise StateError(f"node {node_id} is already part of cluster {owner!r}")
                conn.execute(
                    "INSERT INTO nodes (node_id, cluster, rank, host, port, status) "
                    "VALUES (?, ?, ?, '', 0, 'RESERVED') ON CONFLICT(node_id) DO UPDATE SET "
                    "cluster=excluded.cluster, rank=excluded.rank, host=excluded.host, "
                    "port=excluded.port, status=excluded.status",
                    (node_id, cluster, rank),
                )

    def taken_nodes(self) -> dict[str, str]:
        rows = self.execute("SELECT node_id, cluster FROM nodes").fetchall()
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
                "INSERT INTO preempted_hosts (node_id, since, reason) VALUES (?, ?, ?) "
                "ON CONFLICT(node_id) DO UPDATE SET since=excluded.since, reason=excluded.reason",
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
        rows = self.execute(
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
                (job.cluster, job.job_id, job.status.value, _dump(job)),
            )

    def get_job(self, cluster: str, job_id: int) -> JobRecord | None:
        row = self.execute(
            "SELECT record FROM jobs WHERE cluster=? AND job_id=?", (cluster, job_id)
        ).fetchone()
        return self._job(row["record"], cluster, job_id) if row else None

    def list_jobs(self, cluster: str | None = None) -> list[JobRecord]:
        sql = "SELECT cluster, job_id, record FROM jobs"
        args: tuple[str, ...] = ()
        if cluster is not None:
            sql, args = sql + " WHERE cluster=?", (cluster,)
        rows = self.execute_tuples(sql + " ORDER BY cluster, job_id", args)
        return [self._job(record, name, job_id) for name, job_id, record in rows]

    def clusters_with_unstarted_jobs(self) -> list[str]:
        """Clusters with a job recorded INIT or SETTING_UP (being started, or left so by a
        command that stopped: lifecycle/settle.py), read without the models."""
        rows = self.execute_tuples(
            "SELECT DISTINCT cluster FROM jobs WHERE status IN ('INIT', 'SETTING_UP') "
            "ORDER BY cluster"
        )
        return [name for (name,) in rows]

    def latest_job(self, cluster: str) -> JobRecord | None:
        jobs = self.list_jobs(cluster)
        return jobs[-1] if jobs else None

    def _cluster(self, text: str, name: str) -> ClusterRecord:
        from skyform.state.models import ClusterRecord
        from skyform.state.records import load_record

        return load_record(
            ClusterRecord,
            text,
            what=f"cluster {name!r}",
            where=self.where,
            recover=f"forget the cluster: skyform down --purge {shlex.quote(name)} (then check "
            "by hand what it left running)",
        )

    def _job(self, text: str, cluster: str, job_id: int) -> JobRecord:
        from skyform.state.models import JobRecord
        from skyform.state.records import load_record

        what = f"job {job_id} of cluster {cluster!r}"
        return load_record(JobRecord, text, what=what, where=self.where)


def _dump(record: ClusterRecord | JobRecord) -> str:
    from skyform.state.records import dump_record

    return dump_record(record)
