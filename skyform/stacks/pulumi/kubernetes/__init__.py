"""Kubernetes: one pod per node with an SSH service (program.py is the Pulumi program)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skyform.stacks.pulumi.cloud import PulumiCloud
from skyform.stacks.pulumi.kubernetes.credentials import check_kubernetes
from skyform.stacks.pulumi.kubernetes.inputs import kubernetes_inputs


def _images(gpu: bool, arm: bool, accelerator: str | None) -> list[str]:
    return ["custom-gpu-ubuntu-2204" if gpu else "custom-cpu-ubuntu-2204"]


def _phase(outputs: Mapping[str, Any]) -> str:
    """The pod's phase, or Terminating (as kubectl says) once it is being deleted: a deleted
    pod stays in the API, Running, until its containers have stopped (up to its grace
    period, 30 s by default), and it never runs again."""
    metadata = outputs.get("metadata") or {}
    if isinstance(metadata, dict) and metadata.get("deletionTimestamp"):
        return "Terminating"
    status = outputs.get("status") or {}
    return str(status.get("phase") or "") if isinstance(status, dict) else ""


def _node_id(region: str | None, raw: str) -> str:
    # Pod ids ("namespace/name") repeat across Kubernetes clusters: qualify them.
    return f"kubernetes/{region}/{raw}"


def _object_id(resource: Mapping[str, Any]) -> str | None:
    """The provider's id of an object: namespace/name (name alone if cluster-scoped)."""
    metadata = (resource.get("inputs") or {}).get("metadata") or {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(name, str) or not name:
        return None
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name


CLOUD = PulumiCloud(
    name="kubernetes",
    inputs=kubernetes_inputs,
    node_type="kubernetes:core/v1:Pod",
    alive=frozenset({"Running"}),
    node_state=_phase,
    default_images=_images,
    check=check_kubernetes,
    credential_patterns=(
        "unable to load kubeconfig",
        "invalid configuration: no configuration has been provided",
        "context was not found for specified context",
        "the server has asked for the client to provide credentials",  # HTTP 401
        "Unauthorized",
        "You must be logged in to the server",
    ),
    credential_hint=(
        "Check that `kubectl --context CONTEXT get nodes` works; point KUBECONFIG at "
        "the right file."
    ),
    unreachable_patterns=("Kubernetes cluster is unreachable", "due to unreachable cluster"),
    unreachable_hint=(
        "The cluster's API server did not answer. Check that it is up and reachable from here "
        "(`kubectl --context CONTEXT get nodes` with the same KUBECONFIG), then run this "
        "again. If the cluster is gone for good, `skyform down --purge CLUSTER` forgets it."
    ),
    # the provider's error line says only "unreachable"; its warning says why
    reason=re.compile(r"configured Kubernetes cluster is unreachable: [^\n]+"),
    requirements=("pulumi>=3.181,<4", "pulumi-kubernetes>=4.18,<5"),
    export_credentials=(
        "Credentials: your kubeconfig (the context is in Pulumi.<stack>.yaml; null "
        "means the current one)."
    ),
    node_id=_node_id,
    object_id=_object_id,
    container_images=True,
    node_noun="pod",
)
