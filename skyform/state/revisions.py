"""Plan revisions, of managed jobs and services alike: one table (`revisions`), one row model,
one numbering and one store API.

A revision is one decision of a controller and what it decided: a managed job's launch plan
and one more plan per recovery, a service's replica set after every scaling decision,
replacement, update or rollback. Its `owner` is the work it belongs to, named as that
work's lease is (`managed/<id>`, `service/<name>`: controllers/lease.py uses these names),
so every home sharing the store lists it. Revisions of one owner are numbered 1, 2, ... by
the store, in the transaction that adds one. Each kind keeps its own body (a plan artifact's
bytes; a service's replica set as JSON) and its own `kind` words (ops/managed/revisions.py,
serve/revisions.py); `digest` is the body's sha256, checked when it is read back.

A controller's writes are fenced (state/fencing.py): so is a revision, written in one
transaction of the store.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable
from dataclasses import astuple, dataclass, fields

from skyform.digests import sha256
from skyform.errors import StateError
from skyform.state.db import StateDB

MANAGED = "managed/"
SERVICE = "service/"


def job_owner(job_id: int) -> str:
    """The name a managed job's revisions (and its controller's lease) go by."""
    return f"{MANAGED}{job_id}"


def service_owner(name: str) -> str:
    """The name a service's revisions (and its controller's lease) go by."""
    return f"{SERVICE}{name}"


@dataclass(frozen=True)
class Revision:
    """One row of `revisions` (a plain dataclass: the dashboard lists them by the page)."""

    owner: str
    revision: int
    created_at: float
    kind: str
    reason: str
    path: str | None  # where the body was also saved as a file (a plan revision)
    digest: str

    @property
    def job_id(self) -> int | None:
        """The managed job this revision belongs to (None: it is a service's)."""
        rest = self.owner.removeprefix(MANAGED)
        return int(rest) if rest != self.owner and rest.isdigit() else None

    @property
    def service(self) -> str | None:
        """The service this revision belongs to (None: it is a managed job's)."""
        rest = self.owner.removeprefix(SERVICE)
        return rest if rest != self.owner else None


_FIELDS = tuple(f.name for f in fields(Revision))
_COLUMNS = ", ".join(_FIELDS)


def _revision(row) -> Revision:
    return Revision(**{k: row[k] for k in _FIELDS})


class Revisions:
    """Every plan revision, on top of a StateDB (same database, same transactions)."""

    def __init__(self, db: StateDB) -> None:
        self.db = db

    def add(
        self,
        owner: str,
        *,
        kind: str,
        reason: str,
        body: bytes,
        path_of: Callable[[int], str] | None = None,
    ) -> Revision:
        """Record the owner's next revision (its number is one more than the last one's);
        `path_of(number)` names the file the caller also saves the body to, if any."""
        created = time.time()
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT COALESCE(MAX(revision), 0) AS last FROM revisions WHERE owner=?",
                (owner,),
            ).fetchone()
            number = int(row["last"]) + 1
            added = Revision(
                owner=owner,
                revision=number,
                created_at=created,
                kind=kind,
                reason=reason,
                digest=sha256(body),
                path=path_of(number) if path_of else None,
            )
            self._insert(conn, added, body, keep_existing=False)
        return added

    def restore(
        self, owner: str, revision: int, *, created_at: float, kind: str, reason: str, body: bytes
    ) -> None:
        """Keep a revision made elsewhere under its own number (an older skyform's record
        moved into the store); one already there is left as it is."""
        kept = Revision(owner=owner, revision=revision, created_at=created_at, kind=kind,
                        reason=reason, path=None, digest=sha256(body))  # fmt: skip
        with self.db.transaction() as conn:
            self._insert(conn, kept, body, keep_existing=True)

    @staticmethod
    def _insert(conn, revision: Revision, body: bytes, *, keep_existing: bool) -> None:
        marks = ", ".join("?" for _ in (*_FIELDS, "body"))
        conn.execute(
            f"INSERT INTO revisions ({_COLUMNS}, body) VALUES ({marks})"
            + (" ON CONFLICT(owner, revision) DO NOTHING" if keep_existing else ""),
            (*astuple(revision), body.decode()),
        )

    def list(self, owner: str) -> builtins.list[Revision]:
        """The owner's revisions, oldest first."""
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM revisions WHERE owner=? ORDER BY revision", (owner,)
        ).fetchall()
        return [_revision(r) for r in rows]

    def recent(self, limit: int) -> builtins.list[Revision]:
        """The newest revisions of every owner, of both kinds, newest first."""
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM revisions ORDER BY created_at DESC LIMIT ?", (limit,)
        ).fetchall()
        return [_revision(r) for r in rows]

    def body(self, revision: Revision) -> bytes | None:
        """The revision's body as the store keeps it, checked against its digest (None: the
        store has none, a plan revision made by a skyform before schema 6 keeps it in its
        file only)."""
        row = self.db.execute(
            "SELECT body FROM revisions WHERE owner=? AND revision=?",
            (revision.owner, revision.revision),
        ).fetchone()
        if row is None or row["body"] is None:
            return None
        data = row["body"].encode()
        if sha256(data) != revision.digest:
            raise StateError(
                f"plan revision {revision.revision} of {revision.owner} in the state store "
                f"does not match its digest {revision.digest}",
                "The store was changed by hand or damaged: restore it from a backup.",
            )
        return data

    def delete(self, owner: str) -> None:
        """Forget every revision of the owner (its work is forgotten)."""
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM revisions WHERE owner=?", (owner,))
