"""A managed job's output across recoveries: saved logs of finished attempts, the live log
of the current one, and a line for every transition (RECOVERING, RUNNING again ...)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

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


def print_saved(record: ManagedJobRecord, on_line: LineSink) -> None:
    found = []
    for path in jobdir.logs_dir(record.id).iterdir():
        m = SAVED.fullmatch(path.name)
        if m:
            found.append((tuple(int(g) for g in m.groups()), path))
    for (task, _rec, _job, rank), path in sorted(found):
        label = record.task(task).name
        for text in path.read_text().splitlines():
            on_line(ManagedLine(label, rank, text))


def _current(db: StateDB, record: ManagedJobRecord):
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
    poll: float = 1.0,
) -> ManagedJobRecord:
    jobs = ManagedJobs(db)
    record = jobs.require(job_id)
    if not follow:
        print_saved(record, on_line)
    seen_status = None
    seen_jobs: set[tuple[str, int]] = set()
    while True:
        record = jobs.require(job_id)
        if record.status is not seen_status:
            on_note(
                f"managed job {job_id}: {record.status.value}"
                + (f" ({record.reason})" if record.reason else "")
            )
            seen_status = record.status
        current = _current(db, record)
        if current is not None and (current[0].cluster, current[2].job_id) not in seen_jobs:
            task, cluster, job = current
            seen_jobs.add((task.cluster, job.job_id))
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
            if not follow:
                return record
            continue
        if record.status.is_terminal or not follow:
            return record
        time.sleep(poll)
