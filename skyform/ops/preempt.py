"""Fault injection: take a node away the way a spot reclaim would, to rehearse recovery.

`local` nodes: every skyform job process on the node is killed and the node is marked
preempted (the local engine then reports it dead). `ssh` nodes: the same over SSH, and the
host is marked preempted in state, so the engine reports it dead and does not hand it out
again during the cool-down (config `recovery.preempt_cooldown`). Cloud nodes are not touched:
use the cloud's own fault injection (e.g. AWS FIS) for those.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from skyform.errors import NodeUnreachable, SkyformError, StateError
from skyform.exec.teardown import kill_jobs
from skyform.stacks.local import PREEMPTED_MARKER
from skyform.state.db import StateDB
from skyform.state.models import NodeHandle


def _pick(nodes: list[NodeHandle], rank: int | None, cluster: str) -> list[NodeHandle]:
    if rank is None:
        return nodes
    chosen = [n for n in nodes if n.rank == rank]
    if not chosen:
        raise SkyformError(f"cluster {cluster!r} has nodes 0..{len(nodes) - 1}, not {rank}")
    return chosen


def preempt(db: StateDB, cluster: str, *, rank: int | None, emit: Callable[[str], None]) -> int:
    """Preempt one node (or every node) of a cluster; returns how many."""
    record = db.require_cluster(cluster)
    if record.handle is None:
        raise StateError(f"cluster {cluster!r} has no nodes yet (status {record.status.value})")
    engine = record.handle.engine
    if engine not in ("local", "ssh"):
        raise SkyformError(
            f"cluster {cluster!r} runs on {record.spec.offer.infra}: skyform injects faults only "
            "on local and ssh-pool nodes",
            "Use the cloud's fault injection (e.g. AWS FIS spot interruption) for cloud nodes.",
        )
    nodes = _pick(record.handle.nodes, rank, cluster)
    for node in nodes:
        try:
            emit(f"node {node.rank}: {kill_jobs(node)}")
        except NodeUnreachable as err:
            emit(f"node {node.rank}: already unreachable ({err.message})")
        if engine == "local":
            (Path(node.root or "") / PREEMPTED_MARKER).write_text("preempted by skyform debug\n")
        else:
            db.mark_preempted(node.node_id, f"skyform debug preempt {cluster}")
        db.add_event(
            "node.preempted",
            f"node {node.rank} ({node.node_id}) preempted",
            cluster=cluster,
            data={"rank": node.rank, "node_id": node.node_id},
        )
    return len(nodes)
