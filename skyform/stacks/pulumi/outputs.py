"""Stack outputs -> the ClusterHandle every engine returns; refreshed state -> ClusterState.

The programs export `nodes` (rank, id, public_ip, private_ip, port) and `ssh_user`. After a
`pulumi refresh`, a node's instance either is in the stack with its current state, or is gone
(a terminated spot instance or a deleted pod drops out of the state): both count as not alive.
"""

from __future__ import annotations

from skyform.errors import StackError
from skyform.plan.model import ClusterSpec
from skyform.stacks.engine import ClusterState, NodeState
from skyform.stacks.pulumi.cloud import pulumi_cloud
from skyform.state.models import ClusterHandle, NodeHandle, NodeKind

ENGINE = "pulumi"


def handle_from_outputs(
    desired: ClusterSpec, outputs: dict, *, identity_file: str, stack: str
) -> ClusterHandle:
    offer = desired.offer
    cloud = pulumi_cloud(offer.cloud)
    raw_nodes = outputs.get("nodes")
    if not isinstance(raw_nodes, list) or len(raw_nodes) != desired.num_nodes:
        found = len(raw_nodes) if isinstance(raw_nodes, list) else 0
        raise StackError(
            f"stack {stack} reports {found} node(s), cluster {desired.name} has "
            f"{desired.num_nodes}",
            f"Apply again; if it persists, take it down (skyform down {desired.name}) and re-plan.",
        )
    nodes = []
    for raw in sorted(raw_nodes, key=lambda n: int(n["rank"])):
        public, private = raw.get("public_ip"), raw.get("private_ip")
        host = public or private
        if not host:
            raise StackError(
                f"node {raw.get('rank')} of cluster {desired.name} has no address yet",
                "Apply again once the instance is running.",
            )
        nodes.append(
            NodeHandle(
                rank=int(raw["rank"]),
                kind=NodeKind.SSH,
                host=host,
                port=int(raw.get("port") or 22),
                user=outputs.get("ssh_user"),
                identity_file=identity_file,
                ip=private or host,
                node_id=cloud.node_id(offer.region, str(raw["id"])),
                node_ports=_node_ports(raw.get("node_ports")),
            )
        )
    return ClusterHandle(
        name=desired.name,
        engine=ENGINE,
        infra=offer.infra,
        offer=offer,
        nodes=nodes,
        stack=stack,
    )


def _node_ports(raw: object) -> tuple[tuple[int, int], ...]:
    """A program's `node_ports` ({"8080": 30080}); what is not a port pair is left out."""
    if not isinstance(raw, dict):
        return ()
    out = []
    for port, reached in raw.items():
        try:
            out.append((int(port), int(reached)))
        except (TypeError, ValueError):
            continue
    return tuple(sorted(out))


def cluster_state(handle: ClusterHandle, resources: list[dict]) -> ClusterState:
    """Per-node liveness from a (refreshed) deployment's resources."""
    cloud = pulumi_cloud(handle.offer.cloud)
    by_rank: dict[int, dict] = {}
    for resource in resources:
        if resource.get("type") != cloud.node_type or resource.get("delete"):
            continue
        name = str(resource.get("urn", "")).rsplit("::", 1)[-1]
        if name.startswith("node-") and name[5:].isdigit():
            by_rank[int(name[5:])] = resource.get("outputs") or {}
    spot = handle.offer.spot
    states = []
    for node in handle.nodes:
        outputs = by_rank.get(node.rank)
        if outputs is None:
            noun = cloud.node_noun
            detail = f"preempted: the spot {noun} is gone" if spot else f"the {noun} is gone"
            states.append(
                NodeState(
                    rank=node.rank, node_id=node.node_id, alive=False, detail=detail, gone=True
                )
            )
            continue
        state = cloud.node_state(outputs)
        alive = state in cloud.alive
        detail = state or "unknown state"
        if not alive and spot and state in ("terminated", "TERMINATED"):
            detail += " (spot instance preempted)"
        states.append(NodeState(rank=node.rank, node_id=node.node_id, alive=alive, detail=detail))
    return ClusterState(name=handle.name, exists=bool(resources), nodes=states)
