"""The request log the autoscaler reads: one line `<unix second> <requests>` per second
that had traffic, appended once that second is over.

Every request counts, including those answered 503 while no replica is READY: that is
what wakes a service scaled to zero (SkyPilot counts them too). Per-second lines keep the
file small at any QPS; it is compacted to the last `KEEP_SECONDS` when it grows.
"""

from __future__ import annotations

import os
from pathlib import Path

from skyform.paths import write_atomic

KEEP_SECONDS = 600
COMPACT_BYTES = 256 * 1024


class RequestLog:
    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path is not None else None
        self.pending: dict[int, int] = {}

    def record(self, now: float) -> None:
        second = int(now)
        self.pending[second] = self.pending.get(second, 0) + 1

    def flush(self, now: float, *, everything: bool = False) -> None:
        """Append the seconds that are over (all of them with `everything`)."""
        current = int(now)
        done = sorted(s for s in self.pending if everything or s < current)
        if not done or self.path is None:
            for second in done:
                del self.pending[second]
            return
        text = "".join(f"{s} {self.pending.pop(s)}\n" for s in done)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a") as out:
            out.write(text)
        if self.path.stat().st_size > COMPACT_BYTES:
            self._compact(current)

    def _compact(self, now: int) -> None:
        assert self.path is not None
        kept = [(s, n) for s, n in read_counts(self.path) if s >= now - KEEP_SECONDS]
        write_atomic(self.path, "".join(f"{s} {n}\n" for s, n in kept), mode=0o600)


def read_counts(path: str | os.PathLike[str]) -> list[tuple[int, int]]:
    """(second, requests) pairs; malformed or unfinished lines are skipped."""
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return []
    out = []
    complete = text[: text.rfind("\n") + 1]  # a line still being written has no newline yet
    for line in complete.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            out.append((int(parts[0]), int(parts[1])))
    return out
