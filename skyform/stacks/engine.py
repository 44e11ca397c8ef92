"""The StackEngine protocol: how a ClusterSpec becomes (and stops being) real nodes.

Engines: `local` (directories on this machine), `ssh` (hosts reserved from a node pool) and
`pulumi` (one stack per cluster on aws/gcp/kubernetes). They all return a ClusterHandle, so
everything after provisioning (sync, setup, run, recovery) is the same code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from skyform.config import Config
from skyform.errors import StackError
from skyform.plan.model import ClusterSpec
from skyform.state.db import StateDB
from skyform.state.models import ClusterHandle

EventSink = Callable[[str], None]


def no_events(_message: str) -> None:
    """Default event sink: engines report progress here; the CLI passes a drawing one."""


class _Model(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


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


class ClusterState(_Model):
    name: str
    exists: bool
    nodes: list[NodeState] = []

    @property
    def all_alive(self) -> bool:
        return self.exists and all(n.alive for n in self.nodes)


class StackEngine(Protocol):
    name: str

    def preview(self, desired: ClusterSpec) -> StackPreview: ...

    def up(self, desired: ClusterSpec, on_event: EventSink = no_events) -> ClusterHandle: ...

    def refresh(self, handle: ClusterHandle) -> ClusterState: ...

    def destroy(self, handle: ClusterHandle, on_event: EventSink = no_events) -> None: ...


def engine_for(
    cloud: str, *, config: Config, state: StateDB, plan_digest: str | None = None
) -> StackEngine:
    """The engine for an offer's cloud. Cloud engines are imported only when asked for.
    `plan_digest` tags cloud resources with the plan that made them."""
    if cloud == "local":
        from skyform.stacks.local import LocalEngine

        return LocalEngine(config=config)
    if cloud == "ssh":
        from skyform.stacks.sshpool import SSHPoolEngine

        return SSHPoolEngine(config=config, state=state)
    if cloud in ("aws", "gcp", "kubernetes"):
        try:
            from skyform.stacks.pulumi.engine import PulumiEngine
        except ImportError:
            raise StackError(
                f"no engine for {cloud} in this build of skyform",
                f"Install the extra: pip install 'skyform[{cloud}]'",
                nothing_made=True,
            ) from None
        return PulumiEngine(cloud=cloud, config=config, state=state, plan_digest=plan_digest)
    raise StackError(f"skyform has no engine for infra {cloud!r}", nothing_made=True)
