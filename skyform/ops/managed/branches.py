"""Run a managed job's tasks as their dependencies allow: every task whose parents have all
succeeded starts at once, each in its own thread with its own state.db connection (a branch
is one Controller.run_task: provision, submit, watch, recover as for any task).

A failed branch stops the others (they cancel their jobs and are torn down by the caller) and
its status is the job's. For a job group (`execution: parallel` with `primary_tasks`), the
group ends when the primary tasks have succeeded: after `termination_delay` the other tasks
are stopped and marked CANCELLED, and the job SUCCEEDED — SkyPilot's JobGroup contract.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from skyform.ops.managed.groupnet import GroupNet
from skyform.spec import Dag
from skyform.state.managed import ManagedJobStatus

if TYPE_CHECKING:
    from skyform.state.managed import ManagedJobRecord, ManagedTask

Outcome = ManagedJobStatus | BaseException


class Cancelled(Exception):
    pass


class Stopped(Cancelled):
    """A branch told to stop: another branch failed, or the group's primary tasks ended."""


@dataclass
class Shared:
    """What the branches of one job share: the lock around read-modify-write of its record
    (each branch has its own state.db connection), the signal to stop, and for a job group
    its barrier and names."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    stop: threading.Event = field(default_factory=threading.Event)
    group: GroupNet | None = None


class Branch(Protocol):
    """What a branch needs of the controller that runs it (controller.Controller is one)."""

    shared: Shared

    @property
    def db(self) -> Closable: ...
    @property
    def record(self) -> ManagedJobRecord: ...
    def log(self, message: str) -> None: ...
    def run_task(self, index: int, secrets: dict[str, str]) -> ManagedJobStatus: ...
    def update_task(self, task: ManagedTask, **changes: object) -> ManagedTask: ...


class Closable(Protocol):
    def close(self) -> None: ...


def run_branches(ctrl: Branch, dag: Dag, make: Callable[[], Branch]) -> ManagedJobStatus:
    """SUCCEEDED, or the first failed task's status; re-raises a branch's exception
    (Cancelled, NoResources, a controller bug) after the other branches have stopped."""
    done = {t.index for t in ctrl.record.tasks if t.status is ManagedJobStatus.SUCCEEDED}
    pending = [i for i in dag.topological_order() if i not in done]
    primaries = _primary_indexes(dag)
    group_end = _GroupEnd(ctrl, primaries, dag.termination_delay)
    if dag.execution == "parallel" and dag.name:  # a job group: all start together, by name
        tasks = {i: dag.tasks[i].name or str(i) for i in pending}
        ctrl.shared.group = GroupNet(ctrl.record.id, dag.name, tasks)
    running: dict[Future[ManagedJobStatus], int] = {}
    failure: Outcome | None = None

    def branch(index: int) -> ManagedJobStatus:
        worker = make()
        try:
            secrets = dag.tasks[index].secret_values()
            return worker.run_task(index, secrets)
        except Stopped:
            task = worker.record.task(index)
            if not task.status.is_terminal:
                worker.update_task(task, status=ManagedJobStatus.CANCELLED, ended_at=time.time())
            raise
        finally:
            if ctrl.shared.group is not None:
                ctrl.shared.group.leave(index)
            worker.db.close()

    with ThreadPoolExecutor(max_workers=max(1, len(dag.tasks))) as pool:
        while True:
            if failure is None and not group_end.ended:
                for index in [i for i in pending if all(p in done for p in dag.parents(i))]:
                    pending.remove(index)
                    running[pool.submit(branch, index)] = index
            if not running:
                break
            finished, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                index = running.pop(future)
                exc = future.exception()
                result: Outcome = exc if exc is not None else future.result()
                if result is ManagedJobStatus.SUCCEEDED:
                    done.add(index)
                elif isinstance(result, Stopped):
                    continue
                elif failure is None:
                    failure = result
                    ctrl.shared.stop.set()
            if failure is None and group_end.due(done):
                ctrl.shared.stop.set()
    ctrl.shared.stop.clear()
    if isinstance(failure, BaseException):
        raise failure
    return failure or ManagedJobStatus.SUCCEEDED


def _primary_indexes(dag: Dag) -> set[int]:
    names = set(dag.primary_tasks)
    return {i for i, t in enumerate(dag.tasks) if t.name in names}


class _GroupEnd:
    """When a job group's primary tasks have all succeeded, the rest get termination_delay
    seconds and are then stopped."""

    def __init__(self, ctrl: Branch, primaries: set[int], delay: float) -> None:
        self.ctrl = ctrl
        self.primaries = primaries
        self.delay = delay
        self.since: float | None = None
        self.ended = False

    def due(self, done: set[int]) -> bool:
        if not self.primaries or self.ended or not self.primaries <= done:
            return False
        now = time.monotonic()
        if self.since is None:
            self.since = now
            self.ctrl.log(
                f"primary tasks done; stopping the others in {self.delay:g}s (termination_delay)"
            )
        if now - self.since < self.delay:
            return False
        self.ended = True
        return True
