"""The `local` engine: a cluster of N nodes that are directories on this machine.

Node i lives in SKYFORM_HOME/local/<cluster>/node-<i> and acts as that node's HOME; commands
run as local processes through the same runner interface as SSH nodes. This is the embedded
default: it needs no cloud account, no sshd and no network.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from skyform.config import Config, confined, ensure_dir, home
from skyform.errors import StackError
from skyform.infra import BY_NAME, InfraKind
from skyform.plan.model import ClusterSpec
from skyform.stacks.engine import ClusterState, EventSink, NodeState, StackPreview, no_events
from skyform.stacks.health import InfraStatus
from skyform.state.models import ClusterHandle, NodeHandle, NodeKind

if TYPE_CHECKING:
    from skyform.state.db import StateDB

PREEMPTED_MARKER = ".skyform_preempted"


def cluster_dir(name: str) -> Path:
    return confined(home() / "local", name)


def node_dir(name: str, rank: int) -> Path:
    return confined(cluster_dir(name), f"node-{rank}")


class LocalEngine:
    name = "local"

    def __init__(self, *, config: Config | None = None) -> None:
        self.config = config

    def preview(self, desired: ClusterSpec) -> StackPreview:
        existing = sum(node_dir(desired.name, r).is_dir() for r in range(desired.num_nodes))
        return StackPreview(
            cluster=desired.name,
            engine=self.name,
            changes={"create": desired.num_nodes - existing, "same": existing},
            detail=[str(node_dir(desired.name, r)) for r in range(desired.num_nodes)],
        )

    def up(self, desired: ClusterSpec, on_event: EventSink = no_events) -> ClusterHandle:
        ensure_dir(cluster_dir(desired.name))
        nodes = []
        for rank in range(desired.num_nodes):
            root = ensure_dir(node_dir(desired.name, rank))
            (root / PREEMPTED_MARKER).unlink(missing_ok=True)
            on_event(f"node {rank}: {root}")
            nodes.append(
                NodeHandle(
                    rank=rank,
                    kind=NodeKind.LOCAL,
                    host="localhost",
                    port=0,
                    ip="127.0.0.1",
                    node_id=f"local/{desired.name}/node-{rank}",
                    root=str(root),
                )
            )
        return ClusterHandle(
            name=desired.name,
            engine=self.name,
            infra=desired.offer.infra,
            offer=desired.offer,
            nodes=nodes,
        )

    def refresh(self, handle: ClusterHandle) -> ClusterState:
        states = []
        for node in handle.nodes:
            root = Path(node.root or "")
            if not root.is_dir():
                states.append(
                    NodeState(
                        rank=node.rank,
                        node_id=node.node_id,
                        alive=False,
                        detail="node directory is gone",
                    )
                )
            elif (root / PREEMPTED_MARKER).exists():
                states.append(
                    NodeState(
                        rank=node.rank,
                        node_id=node.node_id,
                        alive=False,
                        detail="node was preempted",
                    )
                )
            else:
                states.append(NodeState(rank=node.rank, node_id=node.node_id, alive=True))
        exists = cluster_dir(handle.name).is_dir()
        return ClusterState(name=handle.name, exists=exists, nodes=states)

    def destroy(self, handle: ClusterHandle, on_event: EventSink = no_events) -> None:
        from skyform.exec.teardown import teardown_nodes

        root = cluster_dir(handle.name)  # refused before anything is touched
        # A node's recorded root is a path in a state record (untrusted too): tear down the
        # directory the node must have, never the one the record names.
        nodes = [
            n.model_copy(update={"root": str(node_dir(handle.name, n.rank))}) for n in handle.nodes
        ]
        live = [n for n in nodes if Path(n.root or "").is_dir()]
        teardown_nodes(live, on_event=on_event)
        refuse_live_mounts(root)
        shutil.rmtree(root, ignore_errors=True)
        on_event(f"removed {root}")

    def stop(self, spec: ClusterSpec, handle: ClusterHandle, on_event: EventSink = no_events):
        raise StackError(f"cluster {spec.name!r} cannot be stopped: {BY_NAME['local'].cannot_stop}")

    def start(
        self, spec: ClusterSpec, handle: ClusterHandle, on_event: EventSink = no_events
    ) -> ClusterHandle:
        return handle  # never stopped: there is nothing to start

    def preempt(self, handle: ClusterHandle, nodes: list[NodeHandle], on_event: EventSink) -> None:
        """Take nodes away as a spot reclaim would: their jobs are killed and each node is
        marked, so `refresh` reports it dead until the cluster is provisioned again."""
        from skyform.stacks.sshpool import end_jobs

        for node in nodes:
            end_jobs(node, on_event)
            (node_dir(handle.name, node.rank) / PREEMPTED_MARKER).write_text(
                "preempted by skyform debug\n"
            )


def make(
    cloud: str, *, config: Config, state: StateDB | None = None, plan_digest: str | None = None
) -> LocalEngine:
    return LocalEngine(config=config)


# health (see stacks/registry.py): the nodes are directories here, never gone behind our back


def nodes_gone(handle: ClusterHandle) -> bool:
    return False


def check(
    row: InfraKind, config: Config, env: Mapping[str, str], user_home: Path
) -> list[InfraStatus]:
    cpus = config.local.cpus or os.cpu_count() or 1
    return [InfraStatus(row.name, True, f"this machine: {cpus:g} vCPUs")]


def tool_check() -> InfraStatus | None:
    return None


def refuse_live_mounts(root: Path) -> None:
    """Never remove a directory through a mount still in it: that would delete what the mount
    shows (a bucket's objects). Teardown unmounts them first; this is the last guard."""
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return
    prefix = str(root.resolve()) + "/"
    live = [
        p.replace("\\040", " ")
        for p in (line.split()[1] for line in lines if len(line.split()) > 1)
        if p.startswith(prefix)
    ]
    if live:
        raise StackError(
            f"{live[0]} is still mounted; not removing {root}",
            f"Unmount it (fusermount3 -u {live[0]}) and run the command again.",
        )
