"""A managed job's output across recoveries, from the controller's copies (logmirror.py),
or on another machine than the controller's from the team's state store (logstore.py): every
attempt, including the output of an attempt that was preempted or cancelled, whether its
cluster is still there or not.

Following, status changes (RECOVERING, RUNNING again ...) are noted as they happen; the
job's final status is always the last line, after every line of output.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from skyform.ops.managed.logmirror import attempt_logs
from skyform.ops.managed.logstore import JOB_CAP, sealer, what
from skyform.state.db import StateDB
from skyform.state.managed import ManagedJobRecord, ManagedJobs
from skyform.state.managed_logs import LogKey, ManagedLogs
from skyform.state.teamkeys import PASSPHRASE_ENV, passphrase


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
    """What was printed of each log: a line not finished yet, which attempts were announced."""

    record: ManagedJobRecord
    on_line: LineSink
    on_note: NoteSink
    known: set[LogKey] = field(default_factory=set)
    partial: dict[LogKey, bytes] = field(default_factory=dict)
    announced: set[tuple[int, int, int]] = field(default_factory=set)

    def read(self, gained: list[tuple[LogKey, bytes]], *, everything: bool) -> None:
        """New complete lines of every log; with `everything` (or for an attempt that a newer
        one of its task replaced), also a last line without its newline."""
        self.known.update(key for key, _ in gained)
        newest: dict[int, tuple[int, int, int]] = {}
        for key in self.known:
            newest[key.task] = max(newest.get(key.task, key.attempt), key.attempt)
        data_of: dict[LogKey, bytes] = {}
        for key, data in gained:
            data_of[key] = data_of.get(key, b"") + data
        for key in sorted(self.known):
            *lines, rest = (self.partial.get(key, b"") + data_of.get(key, b"")).split(b"\n")
            if rest and (everything or key.attempt != newest[key.task]):
                lines, rest = [*lines, rest], b""
            self.partial[key] = rest
            for line in lines:
                self._line(key, line.decode(errors="replace"))

    def _line(self, key: LogKey, text: str) -> None:
        name = self.record.task(key.task).name
        if key.attempt not in self.announced:
            self.announced.add(key.attempt)
            self.on_note(
                f"task {name}, attempt {key.recovery + 1} (recovery {key.recovery}, "
                f"cluster job {key.cluster_job})"
            )
        self.on_line(ManagedLine(name, key.rank, text))


@dataclass
class _Files:
    """The controller's copies under this SKYFORM_HOME: bytes consumed of each."""

    job_id: int
    offsets: dict[Path, int] = field(default_factory=dict)
    keys: set[LogKey] = field(default_factory=set)

    def gained(self) -> list[tuple[LogKey, bytes]]:
        found = []
        for key, path in attempt_logs(self.job_id).items():
            self.keys.add(key)
            with open(path, "rb") as fh:
                fh.seek(self.offsets.get(path, 0))
                data = fh.read()
            self.offsets[path] = self.offsets.get(path, 0) + len(data)
            found.append((key, data))
        return found


@dataclass
class _Stored:
    """The copy in the team's state store (logstore.py): the last chunk read."""

    logs: ManagedLogs
    job_id: int
    secret: str
    after: int = 0

    used: bool = False  # some output came from here

    def gained(self, *, local: set[LogKey]) -> list[tuple[LogKey, bytes]]:
        """New chunks of the logs that have no copy here (`local`)."""
        opener = sealer(self.secret)
        found = []
        for chunk in self.logs.chunks(self.job_id, after=self.after):
            self.after = chunk.id
            if chunk.key in local:
                continue
            data = opener.unseal(chunk.sealed, what=what(self.job_id), damaged_hint=_DAMAGED)
            found.append((chunk.key, data))
            self.used = True
        return found


_DAMAGED = "The controller's SKYFORM_HOME still has the job's output: read it there."


def _elsewhere(jobs: ManagedJobs, record: ManagedJobRecord, *, stored: bool) -> list[str]:
    """Why no output is shown here, and what to do."""
    where = _adopted_by(jobs, record)
    if passphrase() is None and stored:
        where = where or f"managed job {record.id}'s output is in the team's state store"
        hint = (
            f"Set {PASSPHRASE_ENV} to the team's passphrase to read its output from the state "
            "store on this machine."
        )
        return [where, hint]
    return [where] if where else []


def stream(
    db: StateDB,
    job_id: int,
    *,
    follow: bool,
    on_line: LineSink,
    on_note: NoteSink,
    poll: float = 0.5,
) -> ManagedJobRecord:
    """Print what the job printed so far (and, following, until it ends), then its status:
    from the controller's copies here, and each log that has none here (run by a controller
    elsewhere, before or after an adoption) from the team's store."""
    jobs = ManagedJobs(db)
    reader = _Reader(jobs.require(job_id), on_line, on_note)
    files, logs = _Files(job_id), ManagedLogs(db)
    secret = passphrase() if db.shares_keys else None
    stored = _Stored(logs, job_id, secret) if secret is not None else None
    shown = None
    while True:
        # the status first: the controller copies an attempt's last output (here and to the
        # store) before it records the status that follows, so a final status read here
        # means every line is in
        record = jobs.require(job_id)
        final = record.status.is_terminal or not follow
        if not final and record.status is not shown:
            on_note(status_note(record))
            shown = record.status
        gained = files.gained()
        if stored is not None:  # the logs with no copy here (another controller's): the store's
            gained += stored.gained(local=files.keys)
        reader.read(gained, everything=final)
        if final:
            if stored and stored.used and sum(logs.stored_sizes(job_id).values()) >= JOB_CAP:
                on_note(_capped(jobs, record))
            if not reader.announced:
                has = db.shares_keys and logs.has_output(job_id)
                for note in _elsewhere(jobs, record, stored=has):
                    on_note(note)
            on_note(status_note(record))
            return record
        time.sleep(poll)


def _capped(jobs: ManagedJobs, record: ManagedJobRecord) -> str:
    where = _adopted_by(jobs, record) or f"managed job {record.id} was run elsewhere"
    return (
        f"the state store keeps the first {_size(JOB_CAP)} of a managed job's output; the "
        f"rest is not shown here ({where})"
    )


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"
