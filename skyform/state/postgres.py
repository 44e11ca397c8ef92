"""Team mode: the state store on PostgreSQL (psycopg 3, the `skyform[postgres]` extra).

Same tables and migrations as the embedded SQLite store (schema.py, through `_ddl`), same
queries (sql.py). A write transaction first takes one transaction-scoped advisory lock, the
equivalent of SQLite's BEGIN IMMEDIATE: writers take turns, readers never wait, and no
transaction can deadlock on another. Times that leases compare come from the server's clock,
so teammates' clocks need not agree.

The URL's password (if it carries one; PGPASSWORD and ~/.pgpass work too) is never part of a
message: `url` is the redacted form.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from skyform.errors import StateError
from skyform.state.checked import CheckedCursor, Damaged, check_rows
from skyform.state.sql import SqlStateStore

# pg_advisory_xact_lock key of the store's write lock ("skyform" in ASCII, as a bigint)
WRITE_LOCK = 0x736B79666F726D
T = TypeVar("T")
CONNECT_TIMEOUT = int(os.environ.get("SKYFORM_STATE_CONNECT_TIMEOUT", "5"))
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
    table or column: the database is damaged), and every row read checked (checked.py)."""

    def __init__(self, raw: Any, url: str, errors: Any, damaged: Damaged) -> None:
        self.raw, self.url, self._errors, self._damaged = raw, url, errors, damaged
        from psycopg.rows import tuple_row

        self._tuple_row = tuple_row

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        cursor = self._guarded(lambda: self.raw.execute(_translate(sql), tuple(args)))
        return CheckedCursor(cursor, sql, self._damaged)

    def tuples(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        def read() -> tuple[list[tuple[Any, ...]], Any]:
            with self.raw.cursor(row_factory=self._tuple_row) as cur:
                return cur.execute(_translate(sql), tuple(args)).fetchall(), cur.description

        rows, description = self._guarded(read)
        check_rows(rows, description, sql, self._damaged)
        return rows

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        def write() -> None:
            with self.raw.cursor() as cur:
                cur.executemany(_translate(sql), [tuple(r) for r in rows])

        self._guarded(write)

    def _guarded(self, action: Callable[[], T]) -> T:
        errors = self._errors.errors
        try:
            return action()
        except self._errors.OperationalError as exc:
            raise _lost(self.url, exc) from None
        except (errors.UndefinedTable, errors.UndefinedColumn) as exc:
            raise self._damaged(_first_line(exc, None)) from None


def _first_line(exc: Exception, secret: str | None) -> str:
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return text.replace(secret, "***") if secret else text


def _lost(url: str, exc: Exception) -> StateError:
    return StateError(
        f"lost the connection to the state database {url}: {_first_line(exc, None)}; "
        "the change in progress was not written",
        _HINT + " Then run the command again.",
    )


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
        password = urlsplit(url).password
        try:
            raw = psycopg.connect(
                url, autocommit=True, row_factory=dict_row, connect_timeout=CONNECT_TIMEOUT
            )
        except psycopg.Error as exc:
            raise StateError(
                f"cannot reach the state database {self.url}: {_first_line(exc, password)}",
                _HINT,
            ) from None
        self._raw = raw
        self._pg = _PgConn(raw, self.url, psycopg, self.damaged)
        self._conn = self._pg
        try:
            self._migrate()
        except BaseException:
            raw.close()
            raise

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
        self._conn.execute("BEGIN")
        self._conn.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK,))

    def _end(self, commit: bool) -> None:
        if commit:
            self._conn.execute("COMMIT")
            return
        # when the connection is gone, the server rolled the transaction back already
        with contextlib.suppress(StateError):
            self._conn.execute("ROLLBACK")

    def execute_tuples(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._pg.tuples(sql, args)

    def after_bulk_insert(self, conn, tables: Sequence[str]) -> None:
        for table in ("events", "usage", "managed_jobs", "managed_logs"):
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
