"""Typed results of a fan-out, and how node states add up to one job status (pure).

Aggregation follows SkyPilot: any node that failed fails the job (FAILED_SETUP during setup),
otherwise any cancelled node cancels it, otherwise it runs until every node succeeded.
Unreachable nodes are kept apart: the caller decides what they mean (apply fails the job,
the recovery controller treats it as a preemption).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from skyform.errors import ExecError, NodeUnreachable
from skyform.exec.node_jobs import NodeJob, NodeJobState
from skyform.state.models import JobStatus

T = TypeVar("T")

EventFn = Callable[[str, "int | None", str], None]
"""on_event(stage, rank, message): called from worker threads; must be quick and not raise.
Stages: connect, sync_workdir, file_mounts, setup, run, cancel, logs."""


def aggregate(states: list[NodeJobState], *, setup: bool = False) -> JobStatus:
    if not states:
        return JobStatus.PENDING
    if any(s in (NodeJobState.FAILED, NodeJobState.MISSING) for s in states):
        return JobStatus.FAILED_SETUP if setup else JobStatus.FAILED
    if NodeJobState.CANCELLED in states:
        return JobStatus.CANCELLED
    if all(s is NodeJobState.SUCCEEDED for s in states):
        return JobStatus.SUCCEEDED
    if all(s is NodeJobState.PENDING for s in states):
        return JobStatus.PENDING
    return JobStatus.SETTING_UP if setup else JobStatus.RUNNING


@dataclass(frozen=True)
class JobState:
    """One job (or setup) across the cluster. `nodes` holds every node that answered."""

    key: str
    status: JobStatus
    nodes: dict[int, NodeJob] = field(default_factory=dict)
    unreachable: dict[int, NodeUnreachable] = field(default_factory=dict)
    setup: bool = False
    skipped: bool = False  # setup only: it had already completed on every node

    @classmethod
    def of(
        cls,
        key: str,
        nodes: dict[int, NodeJob],
        unreachable: dict[int, NodeUnreachable] | None = None,
        *,
        setup: bool = False,
        skipped: bool = False,
    ) -> JobState:
        status = aggregate([j.state for j in nodes.values()], setup=setup)
        return cls(
            key, status, dict(sorted(nodes.items())), dict(unreachable or {}), setup, skipped
        )

    @property
    def exit_codes(self) -> dict[int, int | None]:
        """rank -> exit code (None while running or when unknown), as JobRecord stores it."""
        return {rank: job.exit_code for rank, job in self.nodes.items()}

    @property
    def reasons(self) -> dict[int, str]:
        """rank -> why that node's part did not succeed, when the node said."""
        return {rank: job.reason for rank, job in self.nodes.items() if job.reason}

    @property
    def is_terminal(self) -> bool:
        return not self.unreachable and self.status.is_terminal

    def ended_at(self, noticed: float) -> float:
        """When the job ended: the last node's end as its result file says (the node's
        clock, as SkyPilot's job table has it, and what the autostop agent counts idleness
        from), else `noticed` — when the client saw it end, which a slow poll makes late."""
        ends = [job.ended_at for job in self.nodes.values() if job.ended_at is not None]
        if not ends or len(ends) < len(self.nodes) or self.unreachable:
            return noticed
        return min(max(ends), noticed)

    @property
    def failed_ranks(self) -> list[int]:
        return [
            r
            for r, j in self.nodes.items()
            if j.state in (NodeJobState.FAILED, NodeJobState.MISSING)
        ]

    def summary(self) -> str:
        """One line for people: `FAILED: node 1 exit 3; node 2 unreachable`."""
        parts = []
        for rank, job in self.nodes.items():
            if job.state in (NodeJobState.FAILED, NodeJobState.MISSING):
                code = f"exit {job.exit_code}" if job.exit_code is not None else "failed"
                parts.append(f"node {rank} {code}" + (f" ({job.reason})" if job.reason else ""))
        parts += [f"node {rank} unreachable" for rank in self.unreachable]
        return self.status.value + (": " + "; ".join(parts) if parts else "")

    def raise_for_unreachable(self) -> None:
        """Raise NodeUnreachable (naming every lost node) if any node did not answer."""
        if not self.unreachable:
            return
        first = next(iter(self.unreachable.values()))
        if len(self.unreachable) == 1:
            raise first
        ranks = ", ".join(str(r) for r in self.unreachable)
        raise NodeUnreachable(f"nodes {ranks} did not answer; first: {first.message}", first.hint)


@dataclass(frozen=True)
class NodeOutcome(Generic[T]):
    """What one node's part of a fan-out returned, or the error it raised."""

    rank: int
    value: T | None = None
    error: ExecError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def raise_first(outcomes: Mapping[int, NodeOutcome[Any]], what: str) -> None:
    """Raise the first node error of a fan-out, saying how many nodes failed."""
    errors = [(rank, o.error) for rank, o in sorted(outcomes.items()) if o.error is not None]
    if not errors:
        return
    first = errors[0][1]
    if len(errors) == 1:
        raise first
    others = ", ".join(str(r) for r, _ in errors[1:])
    kind = NodeUnreachable if all(isinstance(e, NodeUnreachable) for _, e in errors) else ExecError
    raise kind(f"{what} failed on {len(errors)} nodes (also {others}): {first.message}", first.hint)


@dataclass(frozen=True)
class LogLine:
    """One complete line of a job's log (no trailing newline) from node `rank`."""

    rank: int
    text: str
    setup: bool = False  # a line of the cluster's setup, not of the job's run
