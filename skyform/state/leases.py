"""Leases in the state store: a named lock with an owner (user@host, pid) and an expiry.

A lease is taken in one write transaction (compare-and-swap on its row): it is free when no
row exists, when the row's lease expired, or when its holder ran on this host and its pid is
gone (a `kill -9` on the same machine frees it at once; on another machine, at expiry). The
holder renews it while it works (lock.py runs the renewer); `force_unlock` drops it whoever
holds it, as Terraform's `force-unlock` does.

Each time a lease is taken anew it gets the next fencing token of its name (fencing.py):
a holder that fences itself with it has its writes refused once someone else takes the
lease. A lease can be handed to another process of the same host (`hand_over`: a service
takes a job's lease and its job controller holds it), keeping its token.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass

from skyform.state.sqlcore import SqlCore, whoami


def lease_ttl() -> float:
    """How long a lease lasts unless renewed (SKYFORM_LEASE_TTL, 30 s)."""
    return float(os.environ.get("SKYFORM_LEASE_TTL", "30"))


@dataclass(frozen=True)
class Lease:
    name: str
    token: str
    owner: str  # user@host
    host: str
    pid: int
    purpose: str
    acquired_at: float
    expires_at: float
    fence: int = 0  # its fencing token (fencing.py)

    def describe(self) -> str:
        since = time.strftime("%H:%M:%S UTC", time.gmtime(self.acquired_at))
        return f"{self.owner} pid {self.pid} (`{self.purpose}`) since {since}"


def _lease(row) -> Lease:
    return Lease(
        name=row["name"],
        token=row["token"],
        owner=row["owner"],
        host=row["host"],
        pid=int(row["pid"]),
        purpose=row["purpose"],
        acquired_at=float(row["acquired_at"]),
        expires_at=float(row["expires_at"]),
        fence=int(row["fence"]),
    )


def pid_alive(pid: int) -> bool:
    """Whether a process of this host runs as `pid` (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def holder_gone(lease: Lease, now: float) -> bool:
    if lease.expires_at <= now:
        return True
    return lease.host == socket.gethostname() and not pid_alive(lease.pid)


class LeaseMixin(SqlCore):
    def try_lease(self, name: str, *, purpose: str, ttl: float) -> Lease | None:
        """Take the lease `name` for `ttl` seconds; None when someone else holds it."""
        with self.transaction() as conn:
            row = conn.execute("SELECT * FROM leases WHERE name=?", (name,)).fetchone()
            now = self.now()
            if row is not None and not holder_gone(_lease(row), now):
                return None
            fence = conn.execute(
                "INSERT INTO fences (name, fence) VALUES (?, 1) ON CONFLICT(name) DO UPDATE "
                "SET fence = fences.fence + 1 RETURNING fence",
                (name,),
            ).fetchone()["fence"]
            lease = Lease(
                name=name,
                token=uuid.uuid4().hex,
                owner=whoami(),
                host=socket.gethostname(),
                pid=os.getpid(),
                purpose=purpose[:200],
                acquired_at=now,
                expires_at=now + ttl,
                fence=int(fence),
            )
            conn.execute(
                "INSERT INTO leases (name, token, owner, host, pid, purpose, acquired_at, "
                "expires_at, fence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO "
                "UPDATE SET token=excluded.token, owner=excluded.owner, host=excluded.host, "
                "pid=excluded.pid, purpose=excluded.purpose, "
                "acquired_at=excluded.acquired_at, expires_at=excluded.expires_at, "
                "fence=excluded.fence",
                (
                    lease.name,
                    lease.token,
                    lease.owner,
                    lease.host,
                    lease.pid,
                    lease.purpose,
                    lease.acquired_at,
                    lease.expires_at,
                    lease.fence,
                ),
            )
            return lease

    def hand_over(self, name: str, token: str, *, ttl: float) -> Lease | None:
        """Take over the lease `name` held with `token` (by the process that started this
        one) as this process, keeping its fencing token; None when it is no longer that
        lease (its holder lost it meanwhile)."""
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE leases SET owner=?, host=?, pid=?, expires_at=? WHERE name=? AND token=?",
                (whoami(), socket.gethostname(), os.getpid(), self.now() + ttl, name, token),
            )
            if cur.rowcount != 1:
                return None
            row = conn.execute("SELECT * FROM leases WHERE name=?", (name,)).fetchone()
            return _lease(row)

    def renew_lease(self, lease: Lease, ttl: float) -> bool:
        """Push the expiry out; False when the lease is no longer ours (forced or expired
        and taken by another holder)."""
        with self.transaction() as conn:
            cur = conn.execute(
                "UPDATE leases SET expires_at=? WHERE name=? AND token=?",
                (self.now() + ttl, lease.name, lease.token),
            )
            return cur.rowcount == 1

    def release_lease(self, lease: Lease) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM leases WHERE name=? AND token=?", (lease.name, lease.token))

    def get_lease(self, name: str) -> Lease | None:
        """The live lease `name` (an expired one, or one whose holder is gone, is None)."""
        row = self.execute("SELECT * FROM leases WHERE name=?", (name,)).fetchone()
        if row is None:
            return None
        lease = _lease(row)
        return None if holder_gone(lease, self.now()) else lease

    def list_leases(self, prefix: str = "") -> list[Lease]:
        rows = self.execute("SELECT * FROM leases ORDER BY name").fetchall()
        now = self.now()
        leases = [_lease(r) for r in rows if r["name"].startswith(prefix)]
        return [lease for lease in leases if not holder_gone(lease, now)]

    def force_unlock(self, name: str) -> Lease | None:
        """Drop the lease whoever holds it; returns what was dropped (None: nothing held)."""
        with self.transaction() as conn:
            row = conn.execute("SELECT * FROM leases WHERE name=?", (name,)).fetchone()
            conn.execute("DELETE FROM leases WHERE name=?", (name,))
        if row is None:
            return None
        lease = _lease(row)
        return None if holder_gone(lease, self.now()) else lease
