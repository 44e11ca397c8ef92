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


def _print_saved(
    record: ManagedJobRecord, printed: set[tuple[int, int]], on_line: LineSink
) -> None:
    for (task, job), files in sorted(_saved(record.id).items()):
        if (task, job) in printed:
            continue
        printed.add((task, job))
        label = record.task(task).name
        for rank, path in sorted(files):
            for text in path.read_text().splitlines():
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
    printed: set[tuple[int, int]] = set()
    seen_status = None
    while True:
        record = jobs.require(job_id)
        if record.status is not seen_status:
            on_note(
                f"managed job {job_id}: {record.status.value}"
                + (f" ({record.reason})" if record.reason else "")
            )
            seen_status = record.status
        _print_saved(record, printed, on_line)
        live = _live(db, record)
        if live is not None and (live[0].index, live[2].job_id) not in printed:
            task, cluster, job = live
            printed.add((task.index, job.job_id))
            on_note(
                f"task {task.name} on {cluster.name} ({cluster.spec.offer.infra}), "
                f"recovery {task.recovery_count}"
            )
            try:
                with open_cluster(cluster.handle, require_all=False) as session:
                    for line in session.logs(job_key(job), follow=follow):
                        on_line(ManagedLine(task.name, line.rank, line.text))
            except ExecError as err:
                on_note(f"lost the log stream: {err.message}")
            continue
        if record.status.is_terminal or not follow:
            _print_saved(jobs.require(job_id), printed, on_line)  # the last attempt's
            return record
        time.sleep(poll)
