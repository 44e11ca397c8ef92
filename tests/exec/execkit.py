"""Helpers shared by the exec tests: cluster handles and job specs."""

from __future__ import annotations

from pathlib import Path

from skyform.plan.model import JobSpec, PlacedOffer
from skyform.state.models import ClusterHandle, NodeHandle, NodeKind


def make_cluster(
    nodes: list[NodeHandle], name: str = "c1", *, gpus: float = 2.0, engine: str = "ssh"
) -> ClusterHandle:
    offer = PlacedOffer(
        cloud=engine,
        region="lab",
        zone=None,
        instance_type="pool-host",
        spot=False,
        hourly_price=0.0,
        accelerator="A100" if gpus else None,
        accelerator_count=gpus,
    )
    return ClusterHandle(
        name=name, engine=engine, infra=offer.infra, offer=offer, nodes=list(nodes)
    )


def local_nodes(root: Path, count: int) -> list[NodeHandle]:
    return [
        NodeHandle(
            rank=i,
            kind=NodeKind.LOCAL,
            host="localhost",
            ip="127.0.0.1",
            node_id=f"local-{i}",
            root=str(root / f"node{i}"),
        )
        for i in range(count)
    ]


def job_spec(**fields) -> JobSpec:
    fields.setdefault("name", "t")
    fields.setdefault("setup_digest", "s" * 64)
    fields.setdefault("job_digest", "j" * 64)
    return JobSpec(**fields)
