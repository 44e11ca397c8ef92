"""Team mode: the state store on PostgreSQL (psycopg 3, the `skyform[postgres]` extra).

Same tables and migrations as the embedded SQLite store (schema.py, through `_ddl`), same
queries (sql.py). A write transaction first takes one transaction-scoped advisory lock, the
equivalent of SQLite's BEGIN IMMEDIATE: writers take turns, readers never wait, and no
transaction can deadlock on another. Times that leases compare come from the server's clock,
so teammates' clocks need not agree.

A connection the server dropped (a restart, a failover) is opened again, trying for
SKYFORM_STATE_RETRY seconds (30 by default), when that is safe: before a transaction starts
and for a read outside one. A transaction cut off half-way is not replayed: the server
rolled it back, and its caller gets a StateError saying nothing was written.

The URL's password (if it carries one; PGPASSWORD and ~/.pgpass work too) is never part of a
message: `url` is the redacted form.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from skyform.errors import StateError
from skyform.state.checked import CheckedCursor, Damaged, check_rows
from skyform.state.leases import lease_ttl
from skyform.state.sql import SqlStateStore

# pg_advisory_xact_lock key of the store's write lock ("skyform" in ASCII, as a bigint)
WRITE_LOCK = 0x736B79666F726D
CONNECT_TIMEOUT = int(os.environ.get("SKYFORM_STATE_CONNECT_TIMEOUT", "5"))
T = TypeVar("T")

_HINT = (
    "Check that the PostgreSQL server is running and the state URL (SKYFORM_STATE_URL, or "
    "state.url in config.yaml) is right; a password can come from PGPASSWORD or ~/.pgpass."
)


def redact(url: str) -> str:
    """The URL without its password (safe for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def _translate(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


class _PgConn:
    """psycopg's connection with `?` placeholders, its failures as StateErrors (a missing
    table or column: the database is damaged), and every row read checked (checked.py).

    A statement that finds the connection gone is run again on a new one when `may_retry()`
    says it is safe (no transaction of ours is open on it), else the loss is raised."""

    def __init__(self, store: PostgresStateStore, errors: Any, damaged: Damaged) -> None:
        self.store, self._errors, self._damaged = store, errors, damaged
        from psycopg.rows import tuple_row

        self._tuple_row = tuple_row

    def _run(self, call: Callable[[Any], T]) -> T:
        try:
            return self._once(call)
        except self._errors.Error as exc:
            if not self._lost_connection(exc):
                raise
            if not (self.store.may_retry() and self.store.dropped()):
                raise _lost(self.store.url, exc) from None
            self.store.reconnect(exc)
        try:
            return self._once(call)
        except self._errors.Error as exc:
            if not self._lost_connection(exc):
                raise
            raise _lost(self.store.url, exc) from None

    def _once(self, call: Callable[[Any], T]) -> T:
        errors = self._errors.errors
        try:
            return call(self.store._raw)
        except errors.InsufficientPrivilege as exc:
            raise StateError(
                f"the state database {self.store.url} refused a change: {_first_line(exc, None)}",
                "This role may only read skyform's tables: run the command with a role that "
                "may change them (SELECT, INSERT, UPDATE, DELETE; see the README's database "
                "roles).",
            ) from None
        except (errors.UndefinedTable, errors.UndefinedColumn) as exc:
            raise self._damaged(_first_line(exc, None)) from None

    def _lost_connection(self, exc: Exception) -> bool:
        """The connection failed, or the server ended the session (a restart, or an idle
        transaction's timeout, which is not an OperationalError)."""
        return isinstance(exc, self._errors.OperationalError) or self.store.dropped()

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        cursor = self._run(lambda raw: raw.execute(_translate(sql), tuple(args)))
        return CheckedCursor(cursor, sql, self._damaged)

    def tuples(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        def fetch(raw: Any) -> tuple[list[tuple[Any, ...]], Any]:
            with raw.cursor(row_factory=self._tuple_row) as cur:
                return cur.execute(_translate(sql), tuple(args)).fetchall(), cur.description

        rows, description = self._run(fetch)
        check_rows(rows, description, sql, self._damaged)
        return rows

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        def run(raw: Any) -> None:
            with raw.cursor() as cur:
                cur.executemany(_translate(sql), [tuple(r) for r in rows])

        self._run(run)


def _first_line(exc: Exception, secret: str | None) -> str:
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return text.replace(secret, "***") if secret else text


def _lost(url: str, exc: Exception, waited: float | None = None) -> StateError:
    tried = f" (tried to reconnect for {waited:g} s)" if waited is not None else ""
    return StateError(
        f"lost the connection to the state database {url}: {_first_line(exc, None)}"
        f"{tried}; the change in progress was not written",
        _HINT + " Then run the command again.",
    )


def retry_window() -> float:
    """How long a command waits for a dropped state database to come back."""
    return float(os.environ.get("SKYFORM_STATE_RETRY", "30"))


class PostgresStateStore(SqlStateStore):
    kind = "postgresql"
    shares_keys = True

    def __init__(self, url: str) -> None:
        super().__init__()
        self._raw_url = url  # with its password, if any: never shown
        self.url = self.where = redact(url)
        try:
            import psycopg
            from psycopg.rows import dict_row
        except ImportError:
            raise StateError(
                f"the state URL {self.url} is a PostgreSQL database, and psycopg (the "
                "PostgreSQL driver) is not installed",
                "Install it: pip install 'skyform[postgres]'",
            ) from None
        self._psycopg, self._dict_row = psycopg, dict_row
        self._pinned = False  # statements of one transaction: never run again elsewhere
        password = urlsplit(url).password
        try:
            raw = self._connect()
        except psycopg.Error as exc:
            raise StateError(
                f"cannot reach the state database {self.url}: {_first_line(exc, password)}",
                _HINT,
            ) from None
        self._raw = raw
        self._pg = _PgConn(self, psycopg, self.damaged)
        self._conn = self._pg
        try:
            self._migrate()
        except BaseException:
            raw.close()
            raise

    def _connect(self) -> Any:
        # a holder frozen in the middle of a transaction (a suspended VM) must not keep the
        # store's write lock for ever: the server ends its session, as if the holder died
        idle = max(10.0, 2 * lease_ttl())
        return self._psycopg.connect(
            self._raw_url,
            autocommit=True,
            row_factory=self._dict_row,
            connect_timeout=CONNECT_TIMEOUT,
            options=f"-c idle_in_transaction_session_timeout={int(idle * 1000)}",
        )

    def may_retry(self) -> bool:
        """A statement may run again on a new connection: it is a read outside any
        transaction (a transaction's BEGIN retries as a whole, in `_begin`; its COMMIT
        never: the outcome of a COMMIT cut off is unknown)."""
        return self._depth == 0 and not self._pinned

    def reconnect(self, cause: Exception) -> None:
        """Replace the dropped connection, trying for the retry window; the loss is raised
        when the server does not come back in time."""
        with contextlib.suppress(Exception):
            self._raw.close()
        window = retry_window()
        deadline = time.monotonic() + window
        while True:
            try:
                self._raw = self._connect()
                return
            except self._psycopg.Error as exc:
                cause = exc
            if time.monotonic() >= deadline:
                raise _lost(self.url, cause, window) from None
            time.sleep(0.5)

    def _ddl(self, statement: str) -> str:
        statement = statement.replace(
            "INTEGER PRIMARY KEY AUTOINCREMENT",
            "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        )
        return re.sub(r"\bREAL\b", "DOUBLE PRECISION", statement)

    def _table_names(self) -> set[str]:
        rows = self._raw.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
        return {row["tablename"] for row in rows}

    def _recovery(self) -> str:
        return (
            "skyform changed nothing. Restore the database from a backup (pg_restore), or "
            "correct the row with psql."
        )

    def _begin(self) -> None:
        """BEGIN and the write lock; on a connection the server dropped (nothing of ours
        ran on it yet), both again on a new one."""
        self._pinned = True
        try:
            try:
                self._lock_for_write()
            except StateError:
                if not self.dropped():
                    raise
                self.reconnect(StateError("the server closed the connection"))
                self._lock_for_write()
        finally:
            self._pinned = False

    def _lock_for_write(self) -> None:
        self._conn.execute("BEGIN")
        self._conn.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK,))

    def dropped(self) -> bool:
        """The server closed this connection (a restart, a failover, a network cut)."""
        return bool(self._raw.closed or self._raw.broken)

    def _end(self, commit: bool) -> None:
        self._pinned = True
        try:
            if commit:
                self._conn.execute("COMMIT")
            elif not self.dropped():  # else the server rolled it back already
                with contextlib.suppress(StateError):
                    self._conn.execute("ROLLBACK")
        finally:
            self._pinned = False

    def execute_tuples(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._pg.tuples(sql, args)

    def after_bulk_insert(self, conn, tables: Sequence[str]) -> None:
        for table in ("events", "usage", "managed_jobs", "managed_logs", "service_requests"):
            if table in tables:
                conn.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT COALESCE(MAX(id), 0) + 1 FROM {table}), false)"
                )

    def now(self) -> float:
        row = self._conn.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp()) AS t").fetchone()
        return float(row["t"])

    def reopen(self) -> PostgresStateStore:
        return PostgresStateStore(self._raw_url)

    def close(self) -> None:
        self._raw.close()
