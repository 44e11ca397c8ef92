"""Reading a state database as untrusted input: every row is checked as it is read.

A state file can be damaged (a disk, an edit with sqlite3, a bad restore, a bug of another
version): text where a number belongs (SQLite keeps whatever it is given), NaN or Infinity
in a REAL column (PostgreSQL keeps those), a table or column that is gone. Each is refused
where it is read — which database, which table, which row, which column, and how to
recover — instead of surfacing as a traceback or, worse, as a guess (one NaN price once
broke `status` and `plan`). Nothing is written on the way: the refusal happens at a read.

What a column should hold comes from the migrations (schema.py): INTEGER and REAL columns
hold finite numbers (or NULL where the schema allows it), TEXT columns hold text. Column
names mean one thing in every table, so a row is checked by its columns' names alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from skyform.errors import StateError
from skyform.state.schema import NUMBER, TEXT, column_kinds

if TYPE_CHECKING:
    from skyform.state.sqlcore import Cursor

_TABLE_OF = re.compile(r"\b(?:FROM|INTO|UPDATE)\s+(\w+)", re.I)


Damaged = Callable[[str], StateError]  # what is wrong -> the refusal naming the database


class CheckedCursor:
    """A cursor whose rows are checked when fetched."""

    def __init__(self, cursor: Any, sql: str, damaged: Damaged) -> None:
        self._cursor, self._sql, self._damaged = cursor, sql, damaged
        self.rowcount: int = cursor.rowcount  # known once the statement ran

    def fetchone(self) -> Any:
        row = self._cursor.fetchone()
        if row is not None:
            check_rows([row], self._cursor.description, self._sql, self._damaged)
        return row

    def fetchall(self) -> list[Any]:
        rows = self._cursor.fetchall()
        check_rows(rows, self._cursor.description, self._sql, self._damaged)
        return rows


class CheckedConn:
    """SQLite's connection with its reads checked, and "no such table / column" a refusal
    naming the database (postgres.py's connection does the same with psycopg's errors)."""

    def __init__(self, raw: Any, damaged: Damaged, missing: Callable[[Exception], str | None]):
        self.raw, self._damaged, self._missing = raw, damaged, missing

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Cursor:
        try:
            cursor = self.raw.execute(sql, args)
        except Exception as exc:
            raise self._translated(exc) from None
        return CheckedCursor(cursor, sql, self._damaged)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any:
        try:
            return self.raw.executemany(sql, rows)
        except Exception as exc:
            raise self._translated(exc) from None

    def _translated(self, exc: Exception) -> Exception:
        gone = self._missing(exc)
        return exc if gone is None else self._damaged(gone)


def check_rows(rows: Sequence[Any], description: Any, sql: str, damaged: Damaged) -> None:
    """Refuse the first value that is not what its column holds."""
    if not rows or not description:
        return
    kinds = column_kinds()
    checked = [(i, d[0], kinds[d[0]]) for i, d in enumerate(description) if d[0] in kinds]
    if not checked:
        return
    by_name = isinstance(rows[0], dict)
    for row in rows:
        for index, name, kind in checked:
            value = row[name] if by_name else row[index]
            if not _fits(value, kind):
                raise damaged(_describe(row, by_name, description, sql, name, value, kind))


def _fits(value: Any, kind: str) -> bool:
    if value is None:  # the database enforces NOT NULL itself
        return True
    if kind == TEXT:
        return type(value) is str
    if type(value) is int:
        return True
    return type(value) is float and math.isfinite(value)


def _describe(
    row: Any, by_name: bool, description: Any, sql: str, name: str, value: Any, kind: str
) -> str:
    found = _TABLE_OF.search(sql)
    table = found[1] if found else "a table"
    names = [d[0] for d in description]
    values = {n: (row[n] if by_name else row[i]) for i, n in enumerate(names)}
    key = next((k for k in ("id", "name", "node_id", "uri", "job_id") if k in values), None)
    which = f"the row {key}={values[key]!r}" if key and key != name else "a row"
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    want = "a finite number" if kind == NUMBER else "text"
    return f"table {table}, {which}: column {name} holds {shown}, not {want}"
