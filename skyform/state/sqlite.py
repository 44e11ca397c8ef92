"""The embedded default store: one SQLite file under SKYFORM_HOME (state.db), in WAL mode.

Files are 0600 (the database and its -wal/-shm sidecars). Every write runs in a BEGIN
IMMEDIATE transaction: concurrent skyform processes on this machine take turns.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import cast

from skyform.errors import StateError
from skyform.paths import ensure_dir
from skyform.state.sql import SqlStateStore
from skyform.state.sqlcore import Conn

BUSY_TIMEOUT_MS = 10_000


class SqliteStateStore(SqlStateStore):
    kind = "sqlite"

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        ensure_dir(self.path.parent)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        try:
            self._sqlite = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        except sqlite3.DatabaseError as exc:
            raise self._unusable(exc) from None
        self._sqlite.row_factory = sqlite3.Row
        self._conn = cast(Conn, self._sqlite)  # sqlite3 reads rows by name like the protocol
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
            "If it is corrupt, move it aside; `skyform status` will start a new one "
            "(clusters it knew about must then be cleaned up by hand).",
        )

    def _begin(self) -> None:
        self._sqlite.execute("BEGIN IMMEDIATE")

    def _end(self, commit: bool) -> None:
        self._sqlite.execute("COMMIT" if commit else "ROLLBACK")

    def reopen(self) -> SqliteStateStore:
        return SqliteStateStore(self.path)

    def close(self) -> None:
        self._sqlite.close()
