"""The embedded default store: one SQLite file under SKYFORM_HOME (state.db), in WAL mode.

Files are 0600 (the database and its -wal/-shm sidecars). Every write runs in a BEGIN
IMMEDIATE transaction: concurrent skyform processes on this machine take turns.

A new state is only ever a *missing* file: it is made beside its place and linked in
whole, so no skyform leaves an empty file behind. Anything else at that path that is not
a SQLite database skyform can read — an empty file (once taken as a fresh state, which
forgot every running cluster), a directory, a device, a FIFO, a link to nothing or a link
loop — is refused with the path and what to do, and nothing is written to it.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from pathlib import Path
from typing import cast

from skyform.errors import StateError
from skyform.paths import atomic_path, ensure_dir, file_kind, home, warn_if_shared
from skyform.state.checked import CheckedConn
from skyform.state.sql import SqlStateStore
from skyform.state.sqlcore import Conn

BUSY_TIMEOUT_MS = 10_000
_FRESH_HINT = "Point SKYFORM_HOME (or the state URL) elsewhere for a new state."


class SqliteStateStore(SqlStateStore):
    kind = "sqlite"

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self.where = str(self.path)
        if not _existing_state(self.path):
            ensure_dir(self.path.parent)
            _create(self.path)
        folder = self.path.parent.resolve()
        warn_if_shared(folder, "SKYFORM_HOME" if folder == home() else "the state folder")
        try:
            self._sqlite = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        except sqlite3.DatabaseError as exc:
            raise self._unusable(exc) from None
        self._sqlite.row_factory = sqlite3.Row
        # sqlite3 reads rows by name like the protocol; every row read is checked
        self._conn = cast(Conn, CheckedConn(self._sqlite, self.damaged, _missing))
        try:
            self._sqlite.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._sqlite.execute("PRAGMA journal_mode = WAL")
            self._sqlite.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except StateError:
            self._sqlite.close()
            raise
        except sqlite3.DatabaseError as exc:
            self._sqlite.close()
            raise self._unusable(exc) from None
        for suffix in ("", "-wal", "-shm"):
            sidecar = Path(f"{self.path}{suffix}")
            if sidecar.exists():
                os.chmod(sidecar, 0o600)

    def _unusable(self, exc: Exception) -> StateError:
        return StateError(
            f"cannot open the state database {self.path}: {exc}",
            "If it is corrupt, restore it from a backup, or move it aside and `skyform "
            "status` starts a new one (clusters it knew about must then be cleaned up by hand).",
        )

    def _recovery(self) -> str:
        return (
            f"skyform changed nothing. Restore {self.path} from a backup, or correct it with "
            "the sqlite3 tool; moved aside, a new state starts (the clusters it knew about "
            "must then be cleaned up by hand)."
        )

    def _table_names(self) -> set[str]:
        rows = self._sqlite.execute("SELECT name FROM sqlite_master WHERE type='table'")
        return {row[0] for row in rows.fetchall()}

    def _begin(self) -> None:
        self._sqlite.execute("BEGIN IMMEDIATE")

    def _end(self, commit: bool) -> None:
        self._sqlite.execute("COMMIT" if commit else "ROLLBACK")

    def reopen(self) -> SqliteStateStore:
        return SqliteStateStore(self.path)

    def close(self) -> None:
        self._sqlite.close()


def _missing(exc: Exception) -> str | None:
    """What is gone, when `exc` says a table or column does not exist."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and text.startswith(
        ("no such table", "no such column")
    ):
        return text
    return None


def _existing_state(path: Path) -> bool:
    """Whether `path` holds a state to open (False: nothing there, a new one is made);
    refused when what is there cannot be one."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise StateError(
                f"the state file {path} is a symbolic link to {os.readlink(path)}, which does "
                "not exist; skyform does not start a new state in its place",
                "Restore the file it points to (is its disk mounted?), or remove the link "
                "to start a new state.",
            ) from None
        return False
    except OSError as exc:
        what = (
            "a symbolic link loop (a link that leads back to itself)"
            if exc.errno == errno.ELOOP
            else f"unreadable ({exc.strerror})"
        )
        raise StateError(
            f"the state file {path} is {what}",
            "Point the link at the real state.db, or move it aside for a new state.",
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise StateError(
            f"the state file {path} is {file_kind(info.st_mode)}, not a regular file; "
            "skyform writes nothing there",
            "Point the state URL at a file (sqlite:///path/state.db), or SKYFORM_HOME at "
            "another folder.",
        )
    if info.st_size == 0:
        raise StateError(
            f"the state file {path} is empty (0 bytes): it is not a skyform state, and "
            "skyform starts a new state only where there is no file",
            "If it held your state, restore it from a backup; if you know it was never "
            f"used, remove it and run again. {_FRESH_HINT}",
        )
    return True


def _create(path: Path) -> None:
    """A new, empty database (in WAL mode) made beside `path` and linked into place, so
    `path` is never an empty file; another process that made it first wins."""
    try:
        with atomic_path(path, 0o600, exclusive=True) as tmp:
            fresh = sqlite3.connect(tmp)
            try:
                fresh.execute("PRAGMA journal_mode = WAL")
            finally:
                fresh.close()
    except FileExistsError:
        pass  # made meanwhile by another skyform process: that one is the state
