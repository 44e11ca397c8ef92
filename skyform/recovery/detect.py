"""Watching a running task: job status files on the nodes, SSH reachability, engine health.

A probe reads the job's status on every node over the open connections (milliseconds when
they are up). A node that does not answer `lost_after` probes in a row is lost; a job that
ended non-zero is a user failure only if the engine says every node is still alive —
otherwise it was killed by the preemption. That is how a spot reclaim is told apart from a
bug in the job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from skyform.exec.results import JobState
from skyform.exec.run import ClusterSession
from skyform.stacks.engine import StackEngine
from skyform.state.models import ClusterHandle, JobStatus


def lost_nodes(engine: StackEngine, handle: ClusterHandle) -> list[str]:
    """The nodes the engine reports dead, each as `node R (why)`; a stack that no longer
    exists at all is one entry. The one verdict on a cluster's loss that managed jobs
    (Monitor) and service replicas (the service controller's engine check) both act on."""
    health = engine.refresh(handle)
    dead = [f"node {n.rank} ({n.detail or 'not alive'})" for n in health.nodes if not n.alive]
    if not health.exists and not dead:
        return ["the cluster is gone"]
    return dead


class Outcome(str, Enum):
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"  # the job exited non-zero on a healthy cluster
    FAILED_SETUP = "FAILED_SETUP"
    CANCELLED = "CANCELLED"
    PREEMPTED = "PREEMPTED"  # nodes were lost


@dataclass(frozen=True)
class Observation:
    outcome: Outcome | None  # None: still running
    detail: str = ""
    exit_codes: dict[int, int | None] = field(default_factory=dict)


@dataclass
class Monitor:
    session: ClusterSession
    engine: StackEngine
    handle: ClusterHandle
    key: str
    lost_after: int = 2
    refresh_every: int = 5  # engine health check every N probes while all looks well
    failures: dict[int, int] = field(default_factory=dict)
    probes: int = 0

    def _lost_nodes(self) -> list[str]:
        return lost_nodes(self.engine, self.handle)

    def probe(self) -> Observation:
        self.probes += 1
        state: JobState = self.session.status(self.key)
        for node in self.handle.nodes:
            rank = node.rank
            self.failures[rank] = self.failures.get(rank, 0) + 1 if rank in state.unreachable else 0
        lost = sorted(r for r, n in self.failures.items() if n >= self.lost_after)
        if lost:
            first = state.unreachable.get(lost[0])
            why = first.message if first is not None else "no answer"
            return Observation(
                Outcome.PREEMPTED,
                f"node {', '.join(map(str, lost))} stopped answering: {why}",
                state.exit_codes,
            )
        if state.unreachable:
            return Observation(None, "a node did not answer; probing again")
        status = state.status
        if status is JobStatus.SUCCEEDED:
            return Observation(Outcome.SUCCEEDED, state.summary(), state.exit_codes)
        if status.is_terminal:
            dead = self._lost_nodes()
            if dead:
                return Observation(Outcome.PREEMPTED, "lost " + ", ".join(dead), state.exit_codes)
            outcome = Outcome.CANCELLED if status is JobStatus.CANCELLED else Outcome.FAILED
            return Observation(outcome, state.summary(), state.exit_codes)
        if self.probes % self.refresh_every == 0:
            dead = self._lost_nodes()
            if dead:
                return Observation(Outcome.PREEMPTED, "lost " + ", ".join(dead), state.exit_codes)
        return Observation(None)
