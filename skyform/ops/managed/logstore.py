"""A managed job's output in the team's state store, so `skyform jobs logs ID [-f]` works on
any machine, not only under the SKYFORM_HOME of the controller that ran the job.

On a team store (PostgreSQL) with SKYFORM_PASSPHRASE set, the controller appends what each
node's local copy (logmirror.py) gained to `managed_logs`, sealed with the passphrase (output
may echo secrets; one key derivation per process, teamkeys.Sealer). The local copy is the
source: the store's size of each log is where the next chunk starts, so a controller started
again carries on without gaps or repeats.

Bounds: a flush at most every FLUSH_INTERVAL (or as soon as CHUNK bytes wait), always at the
end of an attempt and before the status that follows is recorded; chunks of at most CHUNK
bytes; at most JOB_CAP bytes of a job's output are stored (the rest stays in the
controller's copy, and `jobs logs` elsewhere says so). The embedded SQLite store, or no
passphrase: nothing is stored, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from skyform.errors import SkyformError
from skyform.state.db import StateDB
from skyform.state.managed_logs import LogKey, ManagedLogs
from skyform.state.teamkeys import Sealer, passphrase

FLUSH_INTERVAL = 1.0  # seconds
CHUNK = 64 << 10  # bytes per stored chunk
JOB_CAP = 64 << 20  # bytes of one managed job's output the store keeps

_sealers: dict[str, Sealer] = {}


def sealer(secret: str) -> Sealer:
    """This process's Sealer for `secret` (its key derived once)."""
    if secret not in _sealers:
        _sealers[secret] = Sealer(secret)
    return _sealers[secret]


def what(job_id: int) -> str:
    return f"managed job {job_id}'s output"


class StoreCopy:
    """Copies local log files into the store, chunk by chunk."""

    def __init__(
        self, db: StateDB, job_id: int, secret: str, log: Callable[[str], None] | None = None
    ) -> None:
        self.logs = ManagedLogs(db)
        self.job_id = job_id
        self.sealer = sealer(secret)
        self.log = log
        self.sizes = self.logs.stored_sizes(job_id)
        self.last_flush = 0.0
        self.capped = False
        self.files: dict[LogKey, Path] = {}

    @classmethod
    def for_job(
        cls, db: StateDB, job_id: int, log: Callable[[str], None] | None = None
    ) -> StoreCopy | None:
        """None without a team store or a passphrase: the output stays in the local copy."""
        secret = passphrase()
        if not db.shares_keys or secret is None:
            return None
        return cls(db, job_id, secret, log)

    def flush(self, files: dict[LogKey, Path], *, force: bool = False) -> None:
        """Store what `files` gained since the store's copy, when due (or `force`). Files of
        earlier flushes count too: what a failed write left behind goes with the next one."""
        self.files.update(files)
        files = self.files
        pending = {k: _size(p) - self.sizes.get(k, 0) for k, p in files.items()}
        due = force or time.monotonic() - self.last_flush >= FLUSH_INTERVAL
        if self.capped or not any(n > 0 for n in pending.values()):
            return
        if not due and max(pending.values()) < CHUNK:
            return
        self.last_flush = time.monotonic()
        try:
            for key, path in sorted(files.items()):
                if pending[key] > 0:
                    self._copy(key, path)
        except SkyformError as err:  # the store is down: the next flush carries on from here
            if self.log is not None:
                self.log(f"could not store output of managed job {self.job_id}: {err.message}")

    def _copy(self, key: LogKey, path: Path) -> None:
        start = self.sizes.get(key, 0)
        room = JOB_CAP - sum(self.sizes.values())
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read(max(room, 0))
        if len(data) >= room:
            self.capped = True
        chunks = []
        for at in range(0, len(data), CHUNK):
            piece = data[at : at + CHUNK]
            chunks.append((start + at, len(piece), self.sealer.seal(piece)))
        if chunks:
            self.logs.append(self.job_id, key, chunks)
            self.sizes[key] = start + len(data)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
