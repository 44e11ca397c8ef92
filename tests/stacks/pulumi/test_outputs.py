"""Stack outputs -> ClusterHandle, and refreshed state -> which nodes are alive."""

from __future__ import annotations

import pytest
from pulumi_specs import AWS_G5, AWS_M5, GCP_N1_V100, K8S_CPU, spec

from skyform.errors import StackError
from skyform.stacks.pulumi.outputs import cluster_state, handle_from_outputs
from skyform.state.models import NodeKind

KEY = "/home/u/.skyform/keys/skyform-key"


def outputs(n: int, user: str = "ubuntu", **node) -> dict:
    return {
        "nodes": [
            {"rank": r, "id": f"i-{r}", "public_ip": f"54.0.0.{r}", "private_ip": f"10.0.0.{r}",
             "port": 22, **node}
            for r in reversed(range(n))
        ],
        "ssh_user": user,
    }  # fmt: skip


def test_handle_has_one_ssh_node_per_rank_with_skyforms_key():
    handle = handle_from_outputs(
        spec(AWS_M5, nodes=3), outputs(3), identity_file=KEY, stack="skyform/c1"
    )
    assert (handle.name, handle.engine, handle.stack) == ("c1", "pulumi", "skyform/c1")
    assert handle.infra == "aws/us-west-2/usw2-az1" and handle.offer == AWS_M5
    assert [n.rank for n in handle.nodes] == [0, 1, 2]
    node = handle.nodes[1]
    assert node.kind is NodeKind.SSH
    assert (node.host, node.port, node.user, node.ip) == ("54.0.0.1", 22, "ubuntu", "10.0.0.1")
    assert node.identity_file == KEY and node.node_id == "i-1"


def test_nodes_without_public_address_are_reached_privately():
    got = handle_from_outputs(
        spec(GCP_N1_V100), outputs(1, public_ip=None), identity_file=KEY, stack="s"
    )
    assert got.nodes[0].host == got.nodes[0].ip == "10.0.0.0"


def test_kubernetes_node_ids_are_qualified_by_context():
    raw = outputs(1, user="root", id="default/c1-0", port=30022)
    got = handle_from_outputs(spec(K8S_CPU), raw, identity_file=KEY, stack="s")
    assert got.nodes[0].node_id == "kubernetes/default/default/c1-0"
    assert got.nodes[0].port == 30022 and got.nodes[0].user == "root"


def test_incomplete_outputs_are_an_error_not_a_half_cluster():
    with pytest.raises(StackError, match="reports 1 node"):
        handle_from_outputs(spec(AWS_G5, nodes=2), outputs(1), identity_file=KEY, stack="s")
    with pytest.raises(StackError, match="has no address yet"):
        handle_from_outputs(
            spec(AWS_G5), outputs(1, public_ip=None, private_ip=None), identity_file=KEY, stack="s"
        )


def node(cloud_type: str, rank: int, outputs: dict) -> dict:
    return {"urn": f"urn:pulumi:c1::skyform::{cloud_type}::node-{rank}", "type": cloud_type,
            "outputs": outputs}  # fmt: skip


STACK = {
    "urn": "urn:pulumi:c1::skyform::pulumi:pulumi:Stack::skyform-c1",
    "type": "pulumi:pulumi:Stack",
}
AWS = "aws:ec2/instance:Instance"
DELETED_POD = {
    "status": {"phase": "Running"},
    "metadata": {"deletionTimestamp": "2026-12-04T22:58:01Z"},
}


def test_a_terminated_spot_instance_is_not_alive():
    handle = handle_from_outputs(spec(AWS_M5, nodes=3), outputs(3), identity_file=KEY, stack="s")
    resources = [
        STACK,
        node(AWS, 0, {"instanceState": "running"}),
        node(AWS, 1, {"instanceState": "terminated"}),
        # node-2 dropped out of the state: the provider removes terminated instances on refresh
    ]
    state = cluster_state(handle, resources)
    assert state.exists and not state.all_alive
    assert [(n.rank, n.alive, n.detail) for n in state.nodes] == [
        (0, True, "running"),
        (1, False, "terminated (spot instance preempted)"),
        (2, False, "preempted: the spot instance is gone"),
    ]


@pytest.mark.parametrize(
    ("offer", "type_", "outputs_", "alive"),
    [
        (GCP_N1_V100, "gcp:compute/instance:Instance", {"currentStatus": "RUNNING"}, True),
        (GCP_N1_V100, "gcp:compute/instance:Instance", {"currentStatus": "TERMINATED"}, False),
        (K8S_CPU, "kubernetes:core/v1:Pod", {"status": {"phase": "Running"}}, True),
        (K8S_CPU, "kubernetes:core/v1:Pod", {"status": {"phase": "Failed"}}, False),
        # deleted (kubectl delete pod): still Running until its containers stop, never again
        (K8S_CPU, "kubernetes:core/v1:Pod", DELETED_POD, False),
        (AWS_G5, AWS, {"instanceState": "stopped"}, False),
    ],
)
def test_liveness_per_cloud(offer, type_, outputs_, alive):
    handle = handle_from_outputs(spec(offer), outputs(1), identity_file=KEY, stack="s")
    state = cluster_state(handle, [STACK, node(type_, 0, outputs_)])
    assert state.nodes[0].alive is alive


@pytest.mark.parametrize(
    ("outputs_", "detail"),
    [
        (
            {
                "status": {"phase": "Running"},
                "metadata": {"deletionTimestamp": "2026-12-04T23:07Z"},
            },
            "Terminating",
        ),
        ({"status": {"phase": "Failed"}}, "Failed"),
        ({"status": {"phase": "Succeeded"}}, "Succeeded"),
    ],
)
def test_a_pod_being_deleted_or_ended_is_gone(outputs_, detail):
    """The API keeps a deleted pod, Running, through its grace period (for good when its
    node is gone or a finalizer holds it); an ended pod is never restarted (restartPolicy
    Never). Either is a node the cluster cannot get back: recorded lost, replaced."""
    handle = handle_from_outputs(spec(K8S_CPU), outputs(1), identity_file=KEY, stack="s")
    state = cluster_state(handle, [STACK, node("kubernetes:core/v1:Pod", 0, outputs_)])
    assert [(n.alive, n.gone, n.detail) for n in state.nodes] == [(False, True, detail)]
    assert state.gone == state.nodes


def test_a_deleted_pod_is_named_a_pod():
    handle = handle_from_outputs(spec(K8S_CPU, nodes=2), outputs(2), identity_file=KEY, stack="s")
    pod = "kubernetes:core/v1:Pod"
    state = cluster_state(handle, [STACK, node(pod, 0, {"status": {"phase": "Running"}})])
    assert [(n.rank, n.alive, n.detail) for n in state.nodes] == [
        (0, True, "Running"),
        (1, False, "the pod is gone"),
    ]
