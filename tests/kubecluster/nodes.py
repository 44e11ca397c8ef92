"""Node objects for the test cluster, made from the node lists recorded from real clusters in
tests/fixtures/k8s/ (GKE with `cloud.google.com/gke-accelerator`, EKS with
`k8s.amazonaws.com/accelerator`, and a plain cluster with the GPU operator's labels): their
labels, taints and CPU, memory and `nvidia.com/gpu` capacity, Ready, with the cluster's
bridge address as their InternalIP."""

from __future__ import annotations

import copy
import datetime

from kubeapi import recorded

from kubecluster.rest import Rest

DEFAULT_SETS = ("gke", "eks")


def _stamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def recorded_nodes(sets: tuple[str, ...] = DEFAULT_SETS) -> list[dict]:
    return [copy.deepcopy(node) for name in sets for node in recorded(name)["items"]]


def register(rest: Rest, nodes: list[dict], address: str, kube_version: str) -> None:
    for node in nodes:
        meta = node["metadata"]
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": meta["name"],
                "labels": meta.get("labels") or {},
                "annotations": meta.get("annotations") or {},
            },
            "spec": {k: v for k, v in node["spec"].items() if k in ("taints", "unschedulable")},
        }
        rest.post("/api/v1/nodes", body)
        stamp = _stamp()
        conditions = []
        for condition in node["status"].get("conditions") or []:
            condition = dict(condition, lastHeartbeatTime=stamp, lastTransitionTime=stamp)
            if condition["type"] == "Ready":
                condition.update(status="True", reason="KubeletReady")
            conditions.append(condition)
        info = dict(node["status"].get("nodeInfo") or {}, kubeletVersion=kube_version)
        status = {
            "capacity": node["status"]["capacity"],
            "allocatable": node["status"].get("allocatable") or node["status"]["capacity"],
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": address},
                {"type": "Hostname", "address": meta["name"]},
            ],
            "nodeInfo": info,
        }
        rest.merge_patch(f"/api/v1/nodes/{meta['name']}/status", {"status": status})
        # The TaintNodesByCondition admission plugin gave the new node the taint
        # node.kubernetes.io/not-ready; the node lifecycle controller (not run here) lifts it
        # once the node is Ready.
        taints = node["spec"].get("taints") or []
        rest.merge_patch(f"/api/v1/nodes/{meta['name']}", {"spec": {"taints": taints or None}})
