"""Kubernetes: one pod per node with an SSH service (program.py is the Pulumi program)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skyform.stacks.pulumi.cloud import PulumiCloud
from skyform.stacks.pulumi.kubernetes.credentials import check_kubernetes
from skyform.stacks.pulumi.kubernetes.inputs import kubernetes_inputs


def _images(gpu: bool, arm: bool, accelerator: str | None) -> list[str]:
    return ["custom-gpu-ubuntu-2204" if gpu else "custom-cpu-ubuntu-2204"]


def _phase(outputs: Mapping[str, Any]) -> str:
    status = outputs.get("status") or {}
    return str(status.get("phase") or "") if isinstance(status, dict) else ""


def _node_id(region: str | None, raw: str) -> str:
    # Pod ids ("namespace/name") repeat across Kubernetes clusters: qualify them.
    return f"kubernetes/{region}/{raw}"


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
        "Kubernetes cluster is unreachable",
        "context was not found for specified context",
        "Unauthorized",
        "You must be logged in to the server",
    ),
    credential_hint=(
        "Check that `kubectl --context CONTEXT get nodes` works; point KUBECONFIG at "
        "the right file."
    ),
    requirements=("pulumi>=3.181,<4", "pulumi-kubernetes>=4.18,<5"),
    export_credentials=(
        "Credentials: your kubeconfig (the context is in Pulumi.<stack>.yaml; null "
        "means the current one)."
    ),
    node_id=_node_id,
    container_images=True,
)
