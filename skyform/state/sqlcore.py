"""The plumbing under every SQL state store: one connection, transactions, migrations, meta.

Subclasses (sqlite.py, postgres.py) open the connection and say how a write transaction
starts; everything else — the numbered migrations of schema.py, lineage and serial, the
per-cluster versions — is shared, so both databases hold the same tables with the same
meaning. Queries use `?` placeholders; the PostgreSQL connection translates them.
"""

from __future__ import annotations

import getpass
import re
import socket
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from skyform import __version__
from skyform.errors import StateError
from skyform.state import fencing
from skyform.state.schema import MIGRATIONS, SCHEMA_VERSION, schema_tables


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Conn(Protocol):
    """What a transaction yields: rows read by column name (`row["name"]`)."""

    def execute(self, sql: str, args: Sequence[Any] = ...) -> Cursor: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any: ...


def whoami() -> str:
    """user@host: who a lease or a change is recorded as (never a secret)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def command_line() -> str:
    """The running command for the record: `skyform` and its verb and arguments up to the
    first option (option values can be secrets: `--secret HF_TOKEN=...`)."""
    words = ["skyform"]
    for arg in sys.argv[1:]:
        if arg.startswith("-"):
            break
        words.append(arg)
    return " ".join(words)[:200]


@dataclass(frozen=True)
class LastChange:
    by: str  # user@host
    at: float  # epoch seconds
    command: str

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.at))
        return f"by {self.by} at {when}" + (f" with `{self.command}`" if self.command else "")


class SqlCore:
    """One connection to a state database; the subclass sets `_conn`, `url` and `kind`."""

    kind = "sql"
    url = ""  # for messages: never carries a password
    where = ""  # the database as a person finds it: the SQLite file, or the URL
    shares_keys = False  # a team's store: node keys and host keys travel through it
    # Whom this connection's cluster changes are recorded as made by (`managed job 3`: its
    # controller); None: the running command (command_line)
    acting_for: str | None = None
    _conn: Conn

    def __init__(self) -> None:
        self._depth = 0

    # -- what a backend supplies ---------------------------------------------------------------

    def _begin(self) -> None:
        """Start a write transaction holding the store's one write lock."""
        raise NotImplementedError

    def _end(self, commit: bool) -> None:
        raise NotImplementedError

    def _ddl(self, statement: str) -> str:
        """A migration statement in this database's dialect."""
        return statement

    def now(self) -> float:
        """The time leases are measured in (the database server's clock, where it has one)."""
        return time.time()

    def _table_names(self) -> set[str]:
        """The tables the database holds."""
        raise NotImplementedError

    def _recovery(self) -> str:
        """What to do about a damaged database (the hint of `damaged`)."""
        raise NotImplementedError

    def damaged(self, problem: str) -> StateError:
        """The refusal of a database that is not as skyform wrote it: which one, what is
        wrong, how to recover. Raised before anything is written."""
        return StateError(
            f"the state database {self.where} is damaged: {problem}", self._recovery()
        )

    def after_bulk_insert(self, conn: Conn, tables: Sequence[str]) -> None:
        """Rows were inserted with their ids (a migration): move id counters past them."""

    def reopen(self) -> SqlCore:
        """A second connection to the same store (another thread's, e.g. a lease renewer)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions --------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[Conn]:
        """All of the block or none of it; a nested block joins the outer transaction. In a
        fenced process (fencing.py) it is refused when the process's lease was taken anew."""
        if self._depth:
            yield self._conn
            return
        self._begin()
        self._depth = 1
        try:
            fence = fencing.active()
            if fence is not None:
                fencing.check(self._conn, fence)
            yield self._conn
        except BaseException:
            self._depth = 0
            self._end(commit=False)
            raise
        self._depth = 0
        self._end(commit=True)

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Cursor:
        """One statement outside a transaction (reads; each sees committed data)."""
        return self._conn.execute(sql, args)

    def execute_tuples(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of one read as a tuple, in the query's column order (bulk reads: no
        mapping by name built per row)."""
        return [tuple(row) for row in self._conn.execute(sql, args).fetchall()]

    # -- schema --------------------------------------------------------------------------------

    def _migrate(self) -> None:
        """Bring the schema up to this version, then refuse a database that is not as
        skyform writes it (meta's numbers, a missing table) before any command reads it."""
        meta = self._read_meta()
        if meta is None or not self._up_to_date(meta):
            self._upgrade()
            meta = self._read_meta() or {}
        if "serial" not in meta:
            raise self.damaged("its serial (table meta) is missing")
        self._whole(meta["serial"], "serial", least=0)
        self._check_tables()

    def _upgrade(self) -> None:
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            current = self._stored_schema(conn)
            if current > SCHEMA_VERSION:
                raise self._too_new(conn, current)
            if current == 0 and self._table_names() & set(schema_tables()) - {"meta"}:
                raise self.damaged("its schema version (table meta) is missing")
            if current and not conn.execute("SELECT 1 FROM meta WHERE key='lineage'").fetchone():
                raise self.damaged("its lineage (table meta) is missing")
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for step in MIGRATIONS[version]:
                    if isinstance(step, str):
                        conn.execute(self._ddl(step))
                    else:
                        step(conn)
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                [("schema_version", str(SCHEMA_VERSION)), ("skyform_version", __version__)],
            )
            if current == 0:  # a new database: its identity, and no change yet
                conn.execute("INSERT INTO meta VALUES ('lineage', ?)", (str(uuid.uuid4()),))
                conn.execute("INSERT INTO meta VALUES ('serial', '0')")

    def _stored_schema(self, conn: Conn) -> int:
        """The schema version the database records (0: none yet, a new database)."""
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            return 0
        return self._whole(row["value"], "schema_version", least=1)

    def _whole(self, text: str, key: str, *, least: int) -> int:
        """A number kept as text in `meta`, refused unless it is a whole number >= least."""
        value = text.strip() if isinstance(text, str) else ""
        if not re.fullmatch(r"[0-9]{1,18}", value) or int(value) < least:
            raise self.damaged(f"its {key} (table meta) is {text!r}, not a whole number >= {least}")
        return int(value)

    def _check_tables(self) -> None:
        missing = sorted(set(schema_tables()) - self._table_names())
        if missing:
            listed = ", ".join(missing)
            raise self.damaged(f"table{'s' if len(missing) > 1 else ''} {listed} missing")

    def _read_meta(self) -> dict[str, str] | None:
        """What `meta` says of the database (None: no meta table yet, a new database)."""
        try:
            rows = self._conn.execute(
                "SELECT key, value FROM meta WHERE key IN "
                "('schema_version', 'skyform_version', 'lineage', 'serial')"
            ).fetchall()
        except Exception:  # no meta table (or a damaged one: the upgrade says which)
            self._after_failed_read()
            return None
        return {r["key"]: r["value"] for r in rows}

    def _up_to_date(self, meta: dict[str, str]) -> bool:
        """Written by this very version already: opening it needs no write (and no lock)."""
        return (
            meta.get("schema_version") == str(SCHEMA_VERSION)
            and meta.get("skyform_version") == __version__
            and "lineage" in meta
        )

    def _after_failed_read(self) -> None:
        """A read outside a transaction failed (PostgreSQL: nothing to do in autocommit)."""

    def _too_new(self, conn: Conn, schema: int) -> StateError:
        """An older skyform must not touch tables it does not know: refuse, saying both."""
        row = conn.execute("SELECT value FROM meta WHERE key='skyform_version'").fetchone()
        writer = f"skyform {row['value']}" if row else "a newer skyform"
        return StateError(
            f"the state in {self.url} was written by {writer} (state schema {schema}); "
            f"this skyform ({__version__}) knows state schema {SCHEMA_VERSION} at most",
            "Upgrade skyform (pip install -U skyform) to use this state, or point "
            "SKYFORM_HOME (or SKYFORM_STATE_URL) at another state for this version.",
        )

    def _meta(self, key: str) -> str:
        row = self.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        if row is None or row["value"] is None:
            raise self.damaged(f"its {key} (table meta) is missing")
        return row["value"]

    @property
    def lineage(self) -> str:
        return self._meta("lineage")

    @property
    def serial(self) -> int:
        return self._whole(self._meta("serial"), "serial", least=0)

    @property
    def schema_version(self) -> int:
        return self._whole(self._meta("schema_version"), "schema_version", least=1)

    # -- per-cluster versions --------------------------------------------------------------------

    def _bump(self, conn: Conn, cluster: str) -> None:
        conn.execute(
            "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key='serial'"
        )
        conn.execute(
            "INSERT INTO cluster_versions (name, serial, changed_by, changed_at, command) "
            "SELECT ?, CAST(value AS INTEGER), ?, ?, ? FROM meta WHERE key='serial' "
            "ON CONFLICT(name) DO UPDATE SET serial=excluded.serial, "
            "changed_by=excluded.changed_by, changed_at=excluded.changed_at, "
            "command=excluded.command",
            (cluster, whoami(), time.time(), self.acting_for or command_line()),
        )

    def cluster_version(self, name: str) -> int:
        """The serial at the cluster's last change (0: it never existed in this state)."""
        row = self.execute("SELECT serial FROM cluster_versions WHERE name=?", (name,)).fetchone()
        return int(row["serial"]) if row else 0

    def cluster_change(self, name: str) -> LastChange | None:
        """Who last changed the cluster, when and with which command (None: not recorded)."""
        row = self.execute(
            "SELECT changed_by, changed_at, command FROM cluster_versions WHERE name=?", (name,)
        ).fetchone()
        if row is None or row["changed_by"] is None:
            return None
        return LastChange(row["changed_by"], float(row["changed_at"]), row["command"] or "")
