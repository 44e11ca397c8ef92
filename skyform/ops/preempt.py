"""Fault injection: take a node away the way a spot reclaim would, to rehearse recovery.

Infra the table marks `preempt_on_purpose` (local, ssh pools): its engine's `preempt` kills
every skyform job process on the node and marks it preempted, so the engine reports it dead
(an ssh host is not handed out again during the cool-down, `recovery.preempt_cooldown`).
Cloud nodes are not touched: use the cloud's own fault injection (e.g. AWS FIS) for those.
"""

from __future__ import annotations

from collections.abc import Callable

from skyform.errors import SkyformError, StateError
from skyform.infra import TABLE, infra
from skyform.stacks.registry import engine_for
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
    from skyform.config import load_config

    record = db.require_cluster(cluster)
    if record.handle is None:
        raise StateError(f"cluster {cluster!r} has no nodes yet (status {record.status.value})")
    row = infra(record.spec.offer.cloud)
    if row is None or not row.preempt_on_purpose:
        able = " and ".join(r.name for r in TABLE if r.preempt_on_purpose)
        raise SkyformError(
            f"cluster {cluster!r} runs on {record.spec.offer.infra}: skyform injects faults only "
            f"on {able} nodes",
            "Use the cloud's fault injection (e.g. AWS FIS spot interruption) for cloud nodes.",
        )
    nodes = _pick(record.handle.nodes, rank, cluster)
    engine = engine_for(record.spec.offer.cloud, config=load_config(), state=db)
    engine.preempt(record.handle, nodes, emit)
    for node in nodes:
        db.add_event(
            "node.preempted",
            f"node {node.rank} ({node.node_id}) preempted",
            cluster=cluster,
            data={"rank": node.rank, "node_id": node.node_id},
        )
    return len(nodes)


def preempt_cluster(cluster: str, *, rank: int | None, emit: Callable[[str], None]) -> int:
    """`skyform debug preempt CLUSTER [--node N]`: preempt() in this machine's state."""
    from skyform.state.db import open_state

    with open_state() as db:
        return preempt(db, cluster, rank=rank, emit=emit)
