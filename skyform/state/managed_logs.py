"""A managed job's output kept in the state store (table `managed_logs`, schema 6), so
`skyform jobs logs` works on a machine other than the controller's. The rows hold sealed
bytes only: sealing and opening them is ops/managed/logstore.py's (SKYFORM_PASSPHRASE).
"""

from __future__ import annotations

from dataclasses import dataclass

from skyform.state.db import StateDB


@dataclass(frozen=True, order=True)
class LogKey:
    """One node's log of one attempt: task index, recovery count, cluster job id, rank."""

    task: int
    recovery: int
    cluster_job: int
    rank: int

    @property
    def attempt(self) -> tuple[int, int, int]:
        return (self.task, self.recovery, self.cluster_job)


@dataclass(frozen=True)
class StoredChunk:
    id: int
    key: LogKey
    offset: int
    nbytes: int
    sealed: str


class ManagedLogs:
    def __init__(self, db: StateDB) -> None:
        self.db = db

    def append(self, job_id: int, key: LogKey, chunks: list[tuple[int, int, str]]) -> None:
        """Store (offset, nbytes, sealed) chunks of one log, in one transaction; a chunk
        stored already (a controller started again) is kept as it was."""
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT INTO managed_logs (job_id, task, recovery, cluster_job, rank, "
                "byte_offset, nbytes, sealed) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (job_id, task, recovery, cluster_job, rank, byte_offset) DO NOTHING",
                [
                    (job_id, key.task, key.recovery, key.cluster_job, key.rank, off, n, sealed)
                    for off, n, sealed in chunks
                ],
            )

    def stored_sizes(self, job_id: int) -> dict[LogKey, int]:
        """How many bytes of each of the job's logs the store holds (its next offset)."""
        rows = self.db.execute(
            "SELECT task, recovery, cluster_job, rank, MAX(byte_offset + nbytes) AS size "
            "FROM managed_logs WHERE job_id=? GROUP BY task, recovery, cluster_job, rank",
            (job_id,),
        ).fetchall()
        return {
            LogKey(r["task"], r["recovery"], r["cluster_job"], r["rank"]): int(r["size"])
            for r in rows
        }

    def chunks(self, job_id: int, *, after: int = 0) -> list[StoredChunk]:
        """The job's chunks stored after chunk id `after`, in the order they were stored."""
        rows = self.db.execute(
            "SELECT * FROM managed_logs WHERE job_id=? AND id>? ORDER BY id", (job_id, after)
        ).fetchall()
        return [
            StoredChunk(
                int(r["id"]),
                LogKey(r["task"], r["recovery"], r["cluster_job"], r["rank"]),
                int(r["byte_offset"]),
                int(r["nbytes"]),
                r["sealed"],
            )
            for r in rows
        ]

    def has_output(self, job_id: int) -> bool:
        row = self.db.execute(
            "SELECT 1 AS found FROM managed_logs WHERE job_id=? LIMIT 1", (job_id,)
        ).fetchone()
        return row is not None

    def delete(self, job_id: int) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM managed_logs WHERE job_id=?", (job_id,))
