"""Services in the state store, so every home sharing the store sees and manages them.

One row per service in `services` (the name is the key: two homes creating one name cannot
both win, and the loser is told who owns it), its replicas and versions, the requests other
homes send its controller (`service_requests`: the controller polls them and writes the
answer), and the load balancer's traffic as a time series (`service_stats`); its plan
revisions are rows of state/revisions.py's table, beside the managed jobs'. Records are
stored as the serve layer's JSON (serve/state.py, versions.py read them leniently); this
module only keeps rows.
"""

from __future__ import annotations

import builtins
import json
import time
from dataclasses import dataclass

from skyform.state.db import StateDB
from skyform.state.revisions import Revisions, service_owner

# every table of a service: `services` (keyed by name), then those keyed by `service` (its
# plan revisions are rows of state/revisions.py's table, with the managed jobs')
SERVICE_TABLES = (
    "services",
    "service_replicas",
    "service_versions",
    "service_requests",
    "service_stats",
)


@dataclass(frozen=True)
class ServiceRow:
    name: str
    owner: str  # user@host that made it
    host: str  # where its controller runs
    home: str  # the SKYFORM_HOME there: its logs and the load balancer's files
    status: str
    endpoint: str | None
    record: str  # JSON, without the replicas
    replicas: tuple[str, ...]  # each replica's JSON, by id
    created_at: float


@dataclass(frozen=True)
class ServiceRequest:
    id: int
    service: str
    op: str  # update · terminate · down
    payload: dict[str, object]
    asked_by: str
    asked_at: float


@dataclass(frozen=True)
class StatsWindow:
    """The load balancer's traffic over one window: requests, 5xx answers among them, and
    latency percentiles in milliseconds (None when there was no request)."""

    service: str
    window_start: float
    window_seconds: float
    requests: int
    errors: int
    p50_ms: float | None
    p95_ms: float | None


class Services:
    """Service persistence on top of a StateDB (same database, same transactions)."""

    def __init__(self, db: StateDB) -> None:
        self.db = db

    # -- the service row --------------------------------------------------------------------

    def create(
        self, name: str, *, owner: str, host: str, home: str, status: str, record: str
    ) -> ServiceRow | None:
        """Insert the service; None when it was made, else the row that holds the name (the
        key decides, not a read before the write: two homes racing cannot both win)."""
        now = time.time()
        with self.db.transaction() as conn:
            made = conn.execute(
                "INSERT INTO services (name, owner, host, home, status, endpoint, record, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?) "
                "ON CONFLICT(name) DO NOTHING RETURNING name",
                (name, owner, host, home, status, record, now, now),
            ).fetchone()
        return None if made is not None else self.get(name)

    def get(self, name: str) -> ServiceRow | None:
        row = self.db.execute(
            "SELECT name, owner, host, home, status, endpoint, record, created_at "
            "FROM services WHERE name=?",
            (name,),
        ).fetchone()
        if row is None:
            return None
        replicas = self.db.execute(
            "SELECT record FROM service_replicas WHERE service=? ORDER BY replica_id", (name,)
        ).fetchall()
        return ServiceRow(
            name=row["name"],
            owner=row["owner"],
            host=row["host"],
            home=row["home"],
            status=row["status"],
            endpoint=row["endpoint"],
            record=row["record"],
            replicas=tuple(r["record"] for r in replicas),
            created_at=row["created_at"],
        )

    def names(self) -> list[str]:
        rows = self.db.execute("SELECT name FROM services ORDER BY name").fetchall()
        return [r["name"] for r in rows]

    def put(
        self,
        name: str,
        *,
        status: str,
        endpoint: str | None,
        record: str,
        replicas: builtins.list[tuple[int, str, str]],
    ) -> bool:
        """Replace the service's record and replicas ((id, status, JSON) each); False when
        the service is gone from the store (taken down from another home)."""
        now = time.time()
        with self.db.transaction() as conn:
            updated = conn.execute(
                "UPDATE services SET status=?, endpoint=?, record=?, updated_at=? "
                "WHERE name=? RETURNING name",
                (status, endpoint, record, now, name),
            ).fetchone()
            if updated is None:
                return False
            conn.execute("DELETE FROM service_replicas WHERE service=?", (name,))
            if replicas:
                conn.executemany(
                    "INSERT INTO service_replicas (service, replica_id, status, record) "
                    "VALUES (?, ?, ?, ?)",
                    [(name, rid, status, text) for rid, status, text in replicas],
                )
        return True

    def exists(self, name: str) -> bool:
        return (
            self.db.execute("SELECT 1 FROM services WHERE name=?", (name,)).fetchone() is not None
        )

    def claim(self, name: str, *, host: str, home: str) -> None:
        """Record where the service's controller runs now (it started, or adopted it)."""
        with self.db.transaction() as conn:
            conn.execute("UPDATE services SET host=?, home=? WHERE name=?", (host, home, name))

    def delete(self, name: str) -> None:
        """Forget the service and everything of it in the store."""
        with self.db.transaction() as conn:
            for table in SERVICE_TABLES[1:]:  # keyed by `service`
                conn.execute(f"DELETE FROM {table} WHERE service=?", (name,))
            conn.execute("DELETE FROM services WHERE name=?", (name,))
            Revisions(self.db).delete(service_owner(name))

    # -- versions ------------------------------------------------------------------------------

    def put_version(self, name: str, number: int, record: str) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO service_versions (service, number, record, created_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(service, number) DO UPDATE SET "
                "record=excluded.record",
                (name, number, record, time.time()),
            )

    def version(self, name: str, number: int) -> str | None:
        row = self.db.execute(
            "SELECT record FROM service_versions WHERE service=? AND number=?", (name, number)
        ).fetchone()
        return row["record"] if row else None

    def version_numbers(self, name: str) -> builtins.list[int]:
        rows = self.db.execute(
            "SELECT number FROM service_versions WHERE service=? ORDER BY number", (name,)
        ).fetchall()
        return [int(r["number"]) for r in rows]

    def delete_version(self, name: str, number: int) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "DELETE FROM service_versions WHERE service=? AND number=?", (name, number)
            )

    # -- requests to the controller -------------------------------------------------------------

    def ask(self, name: str, op: str, payload: dict[str, object], asked_by: str) -> int:
        with self.db.transaction() as conn:
            row = conn.execute(
                "INSERT INTO service_requests (service, op, payload, asked_by, asked_at) "
                "VALUES (?, ?, ?, ?, ?) RETURNING id",
                (name, op, json.dumps(payload), asked_by, time.time()),
            ).fetchone()
        return int(row["id"])

    def pending(self, name: str) -> builtins.list[ServiceRequest]:
        """The requests not answered yet, oldest first (a payload that is not a JSON object
        is handed over empty: the controller refuses the request for what it lacks)."""
        rows = self.db.execute(
            "SELECT id, service, op, payload, asked_by, asked_at FROM service_requests "
            "WHERE service=? AND answer IS NULL ORDER BY id",
            (name,),
        ).fetchall()
        out = []
        for r in rows:
            try:
                payload = json.loads(r["payload"])
            except ValueError:
                payload = {}
            out.append(
                ServiceRequest(
                    id=int(r["id"]),
                    service=r["service"],
                    op=r["op"],
                    payload=payload if isinstance(payload, dict) else {},
                    asked_by=r["asked_by"],
                    asked_at=r["asked_at"],
                )
            )
        return out

    def answer(self, request_id: int, answer: dict[str, object]) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE service_requests SET answer=?, answered_at=? WHERE id=?",
                (json.dumps(answer), time.time(), request_id),
            )

    def answer_of(self, request_id: int) -> dict[str, object] | None:
        """The controller's answer (None: not answered yet, or the request is gone)."""
        row = self.db.execute(
            "SELECT answer FROM service_requests WHERE id=?", (request_id,)
        ).fetchone()
        if row is None or row["answer"] is None:
            return None
        try:
            answer = json.loads(row["answer"])
        except ValueError:
            return {"ok": False, "error": "the controller's answer is not JSON"}
        return answer if isinstance(answer, dict) else {"ok": False, "error": "a bad answer"}

    def forget_request(self, request_id: int) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM service_requests WHERE id=?", (request_id,))

    # -- the load balancer's traffic ------------------------------------------------------------

    def add_window(self, window: StatsWindow, *, keep_seconds: float) -> None:
        """Record one window; windows older than `keep_seconds` are dropped."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO service_stats (service, window_start, window_seconds, requests, "
                "errors, p50_ms, p95_ms) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(service, window_start) DO NOTHING",
                (window.service, window.window_start, window.window_seconds, window.requests,
                 window.errors, window.p50_ms, window.p95_ms),
            )  # fmt: skip
            conn.execute(
                "DELETE FROM service_stats WHERE service=? AND window_start < ?",
                (window.service, window.window_start - keep_seconds),
            )

    def windows(self, name: str, since: float = 0.0) -> builtins.list[StatsWindow]:
        rows = self.db.execute(
            "SELECT service, window_start, window_seconds, requests, errors, p50_ms, p95_ms "
            "FROM service_stats WHERE service=? AND window_start >= ? ORDER BY window_start",
            (name, since),
        ).fetchall()
        return [
            StatsWindow(
                service=r["service"],
                window_start=r["window_start"],
                window_seconds=r["window_seconds"],
                requests=int(r["requests"]),
                errors=int(r["errors"]),
                p50_ms=r["p50_ms"],
                p95_ms=r["p95_ms"],
            )
            for r in rows
        ]
