"""A failed replica's end and its log, kept past its cluster.

A failed replica stays listed in `serve status` (SkyPilot keeps its record to show why), but
its cluster is torn down at once: the log `serve logs NAME ID` would read goes with it. So
before the teardown, the controller copies the log of the replica's job from its nodes into
the service's folder (`replica-ID.log`, 0600, its last KEPT_LOG_LINES lines and at most
KEPT_LOG_BYTES), and `serve status` shows the last few lines of it. The copy goes with the
replica's record.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skyform.paths import write_atomic
from skyform.spec.models import REDACTED

if TYPE_CHECKING:
    from skyform.exec.results import LogLine
    from skyform.state.models import JobRecord

KEPT_LOG_LINES = 5000
KEPT_LOG_BYTES = 1 << 20
SHOWN_LINES = 5  # in `serve status`
SHOWN_LINE_CHARS = 200
# a secret's value printed by the program is redacted in the copy; shorter values would
# redact ordinary text ("1", "yes") and are no secret worth the name
MIN_REDACTED_CHARS = 4


@dataclass(frozen=True)
class JobEnd:
    """How a replica's job ended, read from its nodes."""

    status: str  # FAILED, SUCCEEDED, FAILED_SETUP, CANCELLED ...
    exit_code: int | None  # the user's process's (the highest non-zero one on a multi-node job)

    def describe(self) -> str:
        code = "" if self.exit_code is None else f" with code {self.exit_code}"
        return f"its process ended ({self.status}{code})"


def job_end(job: JobRecord | None) -> JobEnd | None:
    """How the replica's process ended, from its cluster's last job as read from the nodes
    (ReplicaClusters.last_job); None while it runs or when there is none. A replica whose
    process exited is FAILED at once, not after its readiness probe's initial delay."""
    if job is None or not job.status.is_terminal:
        return None
    codes = [c for c in job.exit_codes.values() if c is not None]
    failing = [c for c in codes if c != 0]
    code = max(failing) if failing else (codes[0] if codes else None)
    return JobEnd(job.status.value, code)


def kept_log_path(folder: Path, replica_id: int) -> Path:
    return folder / f"replica-{replica_id}.log"


def keep_log(
    lines: list[LogLine] | None, cluster: str, dest: Path, secrets: Iterable[str] = ()
) -> bool:
    """Write the log of the replica's latest job (`lines`, as ReplicaClusters.log_tail read
    them; prefixed as `skyform logs` prints them) to `dest`, bounded, with the values of the
    service's `secrets` a program printed redacted (the copy and its last lines reach the
    service's record and `serve status --json`); False when there is nothing to keep (no
    cluster, no job, nodes gone or silent)."""
    if not lines:
        return False
    shown = []
    for line in lines[-KEPT_LOG_LINES:]:
        setup = ", setup" if line.setup else ""
        shown.append(f"({cluster}, node={line.rank}{setup}) {line.text}\n")
    text = "".join(shown)
    for value in sorted((v for v in secrets if len(v) >= MIN_REDACTED_CHARS), key=len)[::-1]:
        text = text.replace(value, REDACTED)
    data = text.encode(errors="replace")
    write_atomic(dest, data[-KEPT_LOG_BYTES:], mode=0o600)
    return True


def last_lines(path: Path, count: int = SHOWN_LINES) -> list[str]:
    """The last `count` lines of a kept log, without their node prefix, each cut to a width
    a status table can show."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            tail = fh.read().decode(errors="replace").splitlines()
    except OSError:
        return []
    shown = []
    for line in tail[-count:]:
        text = line.split(") ", 1)[1] if line.startswith("(") and ") " in line else line
        shown.append(text[:SHOWN_LINE_CHARS])
    return shown


def drop_kept_log(folder: Path, replica_id: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        kept_log_path(folder, replica_id).unlink()
