"""The state snapshot plans are made against: a cloud cluster whose Pulumi stack lost its
nodes (destroyed outside skyform) is planned as a rebuild, read from the local backend."""

from __future__ import annotations

import json

from skyform.plan.diff import diff_cluster
from skyform.plan.model import Action, ClusterSpec, PlacedOffer
from skyform.stacks.registry import nodes_gone
from skyform.state.db import open_state
from skyform.state.models import ClusterHandle, ClusterRecord, ClusterStatus, NodeHandle
from skyform.state.snapshot import read_snapshot

OFFER = PlacedOffer(
    cloud="aws",
    region="us-east-1",
    zone="use1-az4",
    instance_type="g5.xlarge",
    spot=False,
    hourly_price=1.006,
    accelerator="A10G",
    accelerator_count=1,
)


def _record(name="gpu") -> ClusterRecord:
    node = NodeHandle(
        rank=0, host="203.0.113.7", port=22, user="ubuntu", ip="10.0.0.7", node_id="i-0abc"
    )
    handle = ClusterHandle(
        name=name,
        engine="pulumi",
        infra=OFFER.infra,
        offer=OFFER,
        nodes=[node],
        stack=f"skyform/{name}",
    )
    spec = ClusterSpec(name=name, offer=OFFER, num_nodes=1)
    return ClusterRecord(
        name=name, status=ClusterStatus.UP, spec=spec, handle=handle, hourly_price=1.006
    )


def _checkpoint(home, name, resource_types):
    path = home / "pulumi" / ".pulumi" / "stacks" / "skyform" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    resources = [{"type": t, "urn": f"urn:{i}"} for i, t in enumerate(resource_types)]
    path.write_text(json.dumps({"checkpoint": {"latest": {"resources": resources}}}))
    return path


def test_cluster_with_its_stack_is_current(skyform_home):
    db = open_state()
    db.put_cluster(_record())
    _checkpoint(skyform_home, "gpu", ["pulumi:pulumi:Stack", "aws:ec2/instance:Instance"])
    current = read_snapshot(nodes_gone).clusters["gpu"]
    assert current.status == "UP"
    assert diff_cluster(_record().spec, current).action is Action.NOOP


def test_cluster_whose_stack_is_gone_is_rebuilt(skyform_home):
    db = open_state()
    db.put_cluster(_record())
    path = _checkpoint(skyform_home, "gpu", ["pulumi:pulumi:Stack"])  # instances destroyed
    change = diff_cluster(_record().spec, read_snapshot(nodes_gone).clusters["gpu"])
    assert change.action is Action.REPLACE and "Pulumi stack has no nodes" in change.reason
    path.unlink()  # the whole stack removed
    assert read_snapshot(nodes_gone).clusters["gpu"].status == "GONE"
