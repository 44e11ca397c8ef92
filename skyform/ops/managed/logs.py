"""A managed job's output across recoveries, from the controller's copies (logmirror.py):
every attempt, including the output of an attempt that was preempted or cancelled, whether
its cluster is still there or not.

Following, status changes (RECOVERING, RUNNING again ...) are noted as they happen; the
job's final status is always the last line, after every line of output.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from skyform.ops.managed.logmirror import AttemptLog, attempt_logs
from skyform.state.db import StateDB
from skyform.state.managed import ManagedJobRecord, ManagedJobs


@dataclass(frozen=True)
class ManagedLine:
    task: str
    rank: int
    text: str


LineSink = Callable[[ManagedLine], None]
NoteSink = Callable[[str], None]


def _adopted_by(jobs: ManagedJobs, record: ManagedJobRecord) -> str | None:
    """With no output here: where a controller service that adopted the job copied it."""
    adopted = [e for e in jobs.transitions(record.id) if e.kind == "managed.adopted"]
    if not adopted:
        return None
    name = str(adopted[-1].data.get("controller", "")).removeprefix("controller/")
    return (
        f"managed job {record.id} was run by controller {name}: its output is copied under "
        f"that controller's SKYFORM_HOME; see it there with: skyform jobs logs {record.id}"
    )


def status_note(record: ManagedJobRecord) -> str:
    return f"managed job {record.id}: {record.status.value}" + (
        f" ({record.reason})" if record.reason else ""
    )


@dataclass
class _Reader:
    """What was printed of each copy: bytes consumed, and a line not finished yet."""

    record: ManagedJobRecord
    on_line: LineSink
    on_note: NoteSink
    offsets: dict[Path, int] = field(default_factory=dict)
    partial: dict[Path, bytes] = field(default_factory=dict)
    announced: set[tuple[int, int, int]] = field(default_factory=set)

    def read(self, logs: list[AttemptLog], *, everything: bool) -> None:
        """New complete lines of every copy; with `everything` (or for an attempt that a newer
        one of its task replaced), also a last line without its newline."""
        newest: dict[int, tuple[int, int, int]] = {}
        for log in logs:
            newest[log.task] = max(newest.get(log.task, log.attempt), log.attempt)
        for log in logs:
            with open(log.path, "rb") as fh:
                fh.seek(self.offsets.get(log.path, 0))
                data = fh.read()
            self.offsets[log.path] = self.offsets.get(log.path, 0) + len(data)
            *lines, rest = (self.partial.get(log.path, b"") + data).split(b"\n")
            if rest and (everything or log.attempt != newest[log.task]):
                lines, rest = [*lines, rest], b""
            self.partial[log.path] = rest
            for line in lines:
                self._line(log, line.decode(errors="replace"))

    def _line(self, log: AttemptLog, text: str) -> None:
        name = self.record.task(log.task).name
        if log.attempt not in self.announced:
            self.announced.add(log.attempt)
            self.on_note(
                f"task {name}, attempt {log.recovery + 1} (recovery {log.recovery}, "
                f"cluster job {log.cluster_job})"
            )
        self.on_line(ManagedLine(name, log.rank, text))


def stream(
    db: StateDB,
    job_id: int,
    *,
    follow: bool,
    on_line: LineSink,
    on_note: NoteSink,
    poll: float = 0.5,
) -> ManagedJobRecord:
    """Print what the job printed so far (and, following, until it ends), then its status."""
    jobs = ManagedJobs(db)
    reader = _Reader(jobs.require(job_id), on_line, on_note)
    shown = None
    while True:
        # the status first: the controller copies an attempt's last output before it records
        # the status that follows, so a final status read here means every line is on disk
        record = jobs.require(job_id)
        final = record.status.is_terminal or not follow
        if not final and record.status is not shown:
            on_note(status_note(record))
            shown = record.status
        reader.read(attempt_logs(job_id), everything=final)
        if final:
            if not reader.announced and (elsewhere := _adopted_by(jobs, record)):
                on_note(elsewhere)
            on_note(status_note(record))
            return record
        time.sleep(poll)
