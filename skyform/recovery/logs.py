"""A managed job's output across recoveries: each attempt's log (live while it runs, from the
saved copy once it ended), and a line for every transition (RECOVERING, RUNNING again ...)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skyform.apply.jobrun import job_key
from skyform.errors import ExecError
from skyform.exec.run import open_cluster
from skyform.recovery import jobdir
from skyform.state.db import StateDB
from skyform.state.managed import ManagedJobRecord, ManagedJobs

SAVED = re.compile(r"task(\d+)-rec(\d+)-job(\d+)-node(\d+)\.log")


@dataclass(frozen=True)
class ManagedLine:
    task: str
    rank: int
    text: str


LineSink = Callable[[ManagedLine], None]
NoteSink = Callable[[str], None]


def _saved(job_id: int) -> dict[tuple[int, int], list[tuple[int, Path]]]:
    """(task index, cluster job id) -> [(rank, file)] of the attempts whose logs were saved."""
    found: dict[tuple[int, int], list[tuple[int, Path]]] = {}
    for path in jobdir.logs_dir(job_id).iterdir():
        m = SAVED.fullmatch(path.name)
        if m:
            task, _rec, job, rank = (int(g) for g in m.groups())
            found.setdefault((task, job), []).append((rank, path))
    return found


Attempt = tuple[int, int]  # (task index, cluster job id)


def _print_saved(
    record: ManagedJobRecord,
    done: set[Attempt],
    streamed: dict[Attempt, dict[int, int]],
    on_line: LineSink,
) -> None:
    """Saved logs of attempts not printed in full yet; lines already streamed live (the
    cluster may have gone mid-stream) are skipped."""
    for attempt, files in sorted(_saved(record.id).items()):
        if attempt in done:
            continue
        done.add(attempt)
        label = record.task(attempt[0]).name
        seen = streamed.get(attempt, {})
        for rank, path in sorted(files):
            for text in path.read_text().splitlines()[seen.get(rank, 0) :]:
                on_line(ManagedLine(label, rank, text))


def _live(db: StateDB, record: ManagedJobRecord):
    """(task, cluster record, cluster job) of the attempt running now, if any."""
    for task in record.tasks:
        if task.cluster_job_id is None:
            continue
        cluster = db.get_cluster(task.cluster)
        job = db.get_job(task.cluster, task.cluster_job_id)
        if (
            cluster is not None
            and cluster.handle is not None
            and job is not None
            and not job.status.is_terminal
        ):
            return task, cluster, job
    return None


def stream(
    db: StateDB,
    job_id: int,
    *,
    follow: bool,
    on_line: LineSink,
    on_note: NoteSink,
    poll: float = 0.5,
) -> ManagedJobRecord:
    """Print what the job printed so far (and, following, until it ends)."""
    jobs = ManagedJobs(db)
    done: set[Attempt] = set()  # printed in full
    streamed: dict[Attempt, dict[int, int]] = {}  # lines printed live, per rank
    seen_status = None
    while True:
        record = jobs.require(job_id)
        if record.status is not seen_status:
            on_note(
                f"managed job {job_id}: {record.status.value}"
                + (f" ({record.reason})" if record.reason else "")
            )
            seen_status = record.status
        _print_saved(record, done, streamed, on_line)
        live = _live(db, record)
        if live is not None and (live[0].index, live[2].job_id) not in streamed:
            task, cluster, job = live
            counts = streamed.setdefault((task.index, job.job_id), {})
            on_note(
                f"task {task.name} on {cluster.name} ({cluster.spec.offer.infra}), "
                f"recovery {task.recovery_count}"
            )
            try:
                with open_cluster(cluster.handle, require_all=False) as session:
                    for line in session.logs(job_key(job), follow=follow):
                        counts[line.rank] = counts.get(line.rank, 0) + 1
                        on_line(ManagedLine(task.name, line.rank, line.text))
            except ExecError:
                pass  # the cluster went away mid-stream: its saved copy fills in the rest
            continue
        if record.status.is_terminal or not follow:
            _print_saved(jobs.require(job_id), done, streamed, on_line)  # the last attempt's
            return record
        time.sleep(poll)
