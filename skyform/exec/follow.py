"""Watching a running job across nodes: waiting for it to end, and reading its logs.

Waiting uses the runner's node-side `wait` (a command that blocks up to WAIT_WINDOW seconds
and returns as soon as the job ends), one watcher thread per node, so a node that finishes,
fails or drops off is noticed at once instead of at the next poll of every node.

Following logs reads every node with the runner's node-side `log` that answers as soon as
there is new output or the job has ended (at most one poll later). A node's end seen there is
passed to the watcher of that node (`Fleet.observe`): while logs are followed, a short job
costs one `log` round trip per node and no `wait`.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Protocol

from skyform.errors import ExecError, NodeUnreachable
from skyform.exec import node_jobs
from skyform.exec.node_jobs import NodeJob, NodeJobState
from skyform.exec.results import EventFn, JobState, LogLine, NodeOutcome, T
from skyform.exec.runner import NodeRunner

WAIT_WINDOW = 5  # seconds one node-side `wait` blocks before reporting back
LOG_CHUNK = 1 << 20  # bytes of log read per node per round trip


class Fleet(Protocol):
    """What watching a job needs from an open cluster session (exec.run.ClusterSession)."""

    emit: EventFn

    def ranks(self) -> list[int]: ...

    def runner(self, rank: int) -> NodeRunner | None:
        """The node's open runner; None when it never connected or was lost."""

    def lost(self, rank: int) -> NodeUnreachable:
        """Why a node without a runner is unreachable."""

    def mark_unreachable(self, rank: int, error: NodeUnreachable) -> None: ...

    def fan_out(
        self, fn: Callable[[int, NodeRunner], T], ranks: Iterable[int] | None = None
    ) -> dict[int, NodeOutcome[T]]: ...

    def observe(self, key: str, rank: int, job: NodeJob | None) -> None:
        """A log follower saw the job end on `rank` (or stopped reading it: None)."""

    def observed(self, key: str, rank: int, timeout: float) -> NodeJob | None:
        """What `observe` was told for (key, rank), waiting up to `timeout`; None if nothing."""


class Sightings:
    """Job ends seen by log followers, per (key, rank), for the watchers (thread-safe)."""

    def __init__(self) -> None:
        self._seen: dict[str, dict[int, NodeJob | None]] = {}
        self._changed = threading.Condition()

    def observe(self, key: str, rank: int, job: NodeJob | None) -> None:
        """The job ended on `rank` as `job` (None: the follower stopped reading that node)."""
        with self._changed:
            seen = self._seen.setdefault(key, {})
            if seen.get(rank) is None:
                seen[rank] = job
            self._changed.notify_all()

    def observed(self, key: str, rank: int, timeout: float) -> NodeJob | None:
        """What `observe` was told, waiting up to `timeout` for it; None if nothing."""
        with self._changed:
            self._changed.wait_for(lambda: rank in self._seen.get(key, {}), timeout)
            return self._seen.get(key, {}).get(rank)

    def forget(self, key: str) -> None:
        with self._changed:
            self._seen.pop(key, None)


def _ended(job: NodeJob) -> bool:
    return job.state.is_terminal or job.state is NodeJobState.MISSING


def end_message(job: NodeJob) -> str:
    text = job.state.value.lower()
    if job.exit_code is not None:
        text += f" (exit code {job.exit_code})"
    return text + (f": {job.reason}" if job.reason else "")


def wait_for_job(
    session: Fleet,
    key: str,
    *,
    setup: bool,
    timeout: float | None,
    cancel_on_failure: bool,
    followed: Collection[int] = (),
) -> JobState:
    """`followed`: ranks whose logs a follower reads meanwhile (their ends come from it)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    stage = "setup" if setup else "run"
    nodes: dict[int, NodeJob] = {}
    lost: dict[int, NodeUnreachable] = {}
    updates: queue.Queue = queue.Queue()
    stop = threading.Event()

    def watch(rank: int, runner: NodeRunner) -> None:
        if rank in followed:
            seen = session.observed(key, rank, WAIT_WINDOW)
            if seen is not None:
                updates.put((rank, seen))
                return
            # no end seen by the follower (a long job, or it stopped): ask the node itself
        while not stop.is_set():
            try:
                job = node_jobs.wait(runner, key, WAIT_WINDOW)
            except ExecError as exc:
                updates.put((rank, exc))
                return
            updates.put((rank, job))
            if _ended(job):
                return

    pending = set()
    for rank in session.ranks():
        runner = session.runner(rank)
        if runner is not None:
            pending.add(rank)
            threading.Thread(target=watch, args=(rank, runner), daemon=True).start()
        else:
            lost[rank] = session.lost(rank)
    cancelling = False
    try:
        while pending and not lost:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            try:
                rank, update = updates.get(timeout=left)
            except queue.Empty:
                break
            if isinstance(update, NodeUnreachable):
                lost[rank] = update
                session.mark_unreachable(rank, update)
                session.emit(stage, rank, f"unreachable: {update.message}")
                break  # the caller decides what a lost node means
            if isinstance(update, ExecError):
                raise update
            if nodes.get(rank) != update and _ended(update):
                session.emit(stage, rank, end_message(update))
            nodes[rank] = update
            if _ended(update):
                pending.discard(rank)
                failed = update.state in (NodeJobState.FAILED, NodeJobState.MISSING)
                if failed and cancel_on_failure and not cancelling and pending:
                    cancelling = True
                    session.fan_out(
                        lambda r, runner: node_jobs.cancel(runner, key), sorted(pending)
                    )
    finally:
        stop.set()  # watchers still inside a node-side wait return within WAIT_WINDOW
    return JobState.of(key, nodes, lost, setup=setup)


def follow_logs(
    session: Fleet,
    key: str,
    *,
    rank: int | None,
    follow: bool,
    poll: float,
    setup: bool = False,
    tail: int | None = None,
) -> Iterator[LogLine]:
    """`tail`: start at each node's last `tail` lines (`logs --tail N`), else at the start."""
    ranks = [rank] if rank is not None else session.ranks()
    offsets = dict.fromkeys(ranks, 0)
    if tail is not None:
        count = tail
        starts = session.fan_out(
            lambda _r, runner: node_jobs.tail_offset(runner, key, count), ranks
        )
        for r, start in starts.items():
            if start.value is not None:  # a node that did not answer is reported below
                offsets[r] = start.value
    partial = dict.fromkeys(ranks, b"")
    active = set(ranks)
    lost: dict[int, NodeUnreachable] = {}
    block = follow  # a job just started has nothing to show yet: the node answers when it has
    try:
        while active:
            wait = poll if block else 0
            started = time.monotonic()

            def read(r: int, runner: NodeRunner, wait: float = wait) -> tuple[NodeJob, bytes, int]:
                return node_jobs.read_log(runner, key, offsets[r], LOG_CHUNK, wait)

            outcomes = session.fan_out(read, sorted(active))
            progressed = False
            for r, outcome in sorted(outcomes.items()):
                if isinstance(outcome.error, NodeUnreachable):
                    lost[r] = outcome.error
                    session.emit("logs", r, f"unreachable: {outcome.error.message}")
                    session.observe(key, r, None)
                    active.discard(r)
                    continue
                if outcome.error is not None:
                    raise outcome.error
                assert outcome.value is not None
                job, data, end = outcome.value
                progressed |= bool(data)
                offsets[r] = end
                *lines, partial[r] = (partial[r] + data).split(b"\n")
                for line in lines:  # whole lines only: a UTF-8 character is never split
                    yield LogLine(r, line.decode(errors="replace"), setup)
                if len(data) < LOG_CHUNK and (_ended(job) or not follow):
                    if partial[r]:
                        yield LogLine(r, partial[r].decode(errors="replace"), setup)
                    active.discard(r)
                    if follow:
                        session.observe(key, r, job if _ended(job) else None)
            block = follow and not progressed
            if active and not progressed and time.monotonic() - started < poll / 2:
                time.sleep(poll)  # the nodes did not wait (nothing to wait for): poll as before
    finally:  # an error, or the caller stopped reading: the watchers ask the nodes themselves
        for r in active:
            session.observe(key, r, None)
    if lost:
        JobState.of(key, {}, lost).raise_for_unreachable()
