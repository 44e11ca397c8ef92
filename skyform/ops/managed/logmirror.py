"""The controller's copy of a managed job's output: each attempt's log, per node, pulled from
the nodes while the attempt runs (at every probe) and once more when it ends.

A preempted node takes at most its last probe interval of output with it, and a cancelled or
failed attempt keeps everything it printed. `skyform jobs logs` reads these copies
(see logs.py), so it shows every attempt after the fact, and the clusters can go away.

    jobs/<id>/logs/task<T>-rec<R>-job<J>-node<N>.log   (raw bytes, appended)

On a team store with SKYFORM_PASSPHRASE, each copy also goes to the state store as it grows
(logstore.py), so `jobs logs` works from other machines too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from skyform.exec import node_jobs
from skyform.exec.run import ClusterSession
from skyform.ops.managed import jobdir
from skyform.ops.managed.logstore import StoreCopy
from skyform.state.managed_logs import LogKey

ATTEMPT_LOG = re.compile(r"task(\d+)-rec(\d+)-job(\d+)-node(\d+)\.log")
CHUNK = 1 << 20  # bytes pulled per node per round trip


def log_path(job_id: int, key: LogKey) -> Path:
    name = f"task{key.task}-rec{key.recovery}-job{key.cluster_job}-node{key.rank}.log"
    return jobdir.logs_dir(job_id) / name


def attempt_logs(job_id: int) -> dict[LogKey, Path]:
    """Every attempt's node logs, in the order the attempts ran (then by rank)."""
    found = {}
    for path in jobdir.logs_dir(job_id).iterdir():
        m = ATTEMPT_LOG.fullmatch(path.name)
        if m:
            found[LogKey(*(int(g) for g in m.groups()))] = path
    return dict(sorted(found.items()))


class LogMirror:
    """Appends what the nodes' logs gained since the last pull. The offset of each node is
    the size of its copy, so a controller started again carries on where the last one was."""

    def __init__(
        self,
        session: ClusterSession,
        key: str,
        job_id: int,
        task: int,
        recovery: int,
        job: int,
        store: StoreCopy | None = None,
    ) -> None:
        self.session = session
        self.key = key
        keys = {n.rank: LogKey(task, recovery, job, n.rank) for n in session.cluster.nodes}
        self.paths = {rank: log_path(job_id, key) for rank, key in keys.items()}
        self.store = store
        self.stored = {key: self.paths[rank] for rank, key in keys.items()}

    def pull(self, *, to_the_end: bool = False) -> None:
        """One read per answering node (every read up to the end with `to_the_end`). A node
        that does not answer keeps what was pulled before; it is never waited for twice."""
        active = [r for r in self.paths if r not in self.session.unreachable]
        while active:
            outcomes = self.session.fan_out(self._pull_one, active)
            active = [r for r, o in outcomes.items() if o.ok and o.value and to_the_end]
        if self.store is not None:  # at the end, before the status that follows is recorded
            self.store.flush(self.stored, force=to_the_end)

    def _pull_one(self, rank: int, runner) -> bool:
        """Returns whether a full chunk came (there may be more)."""
        path = self.paths[rank]
        offset = path.stat().st_size if path.exists() else 0
        _, data, _ = node_jobs.read_log(runner, self.key, offset, CHUNK)
        if data:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "ab") as fh:
                fh.write(data)
        return len(data) >= CHUNK
