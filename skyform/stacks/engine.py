"""The StackEngine protocol: how a ClusterSpec becomes (and stops being) real nodes.

Engines: `local` (directories on this machine), `ssh` (hosts reserved from a node pool) and
`pulumi` (one stack per cluster, one folder per cloud). They all return a ClusterHandle, so
everything after provisioning (sync, setup, run, recovery) is the same code. Which engine a
cloud uses is the infra table's (`skyform/infra.py`); `stacks/registry.py` finds it by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from skyform.frozen import Frozen as _Model
from skyform.plan.model import ClusterSpec
from skyform.state.models import ClusterHandle, NodeHandle

EventSink = Callable[[str], None]


def no_events(_message: str) -> None:
    """Default event sink: engines report progress here; the CLI passes a drawing one."""


class StackPreview(_Model):
    """What `up` would do, in the engine's own words (e.g. Pulumi's change summary)."""

    cluster: str
    engine: str
    changes: dict[str, int] = {}
    detail: list[str] = []


class NodeState(_Model):
    rank: int
    node_id: str
    alive: bool
    detail: str = ""
    # The infra itself reports the node no longer exists (a refreshed stack without it), not
    # merely that it does not answer: the cluster cannot get it back, only replace it.
    gone: bool = False


class ClusterState(_Model):
    name: str
    exists: bool
    nodes: list[NodeState] = []

    @property
    def all_alive(self) -> bool:
        return self.exists and all(n.alive for n in self.nodes)

    @property
    def gone(self) -> list[NodeState]:
        return [n for n in self.nodes if n.gone]


class StackEngine(Protocol):
    name: str

    def preview(self, desired: ClusterSpec) -> StackPreview: ...

    def up(self, desired: ClusterSpec, on_event: EventSink = no_events) -> ClusterHandle: ...

    def refresh(self, handle: ClusterHandle) -> ClusterState: ...

    def destroy(self, handle: ClusterHandle, on_event: EventSink = no_events) -> None: ...

    def stop(self, spec: ClusterSpec, handle: ClusterHandle, on_event: EventSink) -> None:
        """Stop the nodes, keeping what the infra table's `stop` says stays."""

    def start(self, spec: ClusterSpec, handle: ClusterHandle, on_event: EventSink) -> ClusterHandle:
        """Run stopped nodes again; their addresses may be new."""

    def preempt(self, handle: ClusterHandle, nodes: list[NodeHandle], on_event: EventSink) -> None:
        """Take nodes away as a spot reclaim would (infra the table marks preempt_on_purpose)."""
