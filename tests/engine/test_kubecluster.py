"""The test cluster itself, read as skyform reads a cluster: through the kubernetes client
with a kubeconfig (a real kube-apiserver with token authentication)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubeapi import recorded

pytestmark = pytest.mark.engine


def _core(kubeconfig):
    from kubernetes import client, config

    return client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))


def test_the_api_server_answers_a_token_and_refuses_a_wrong_one(kube_cluster, tmp_path):
    from kubernetes.client.exceptions import ApiException

    nodes = _core(kube_cluster.kubeconfig(tmp_path / "good")).list_node().items
    assert len(nodes) == len(recorded("gke")["items"]) + len(recorded("eks")["items"])
    wrong = _core(kube_cluster.kubeconfig(tmp_path / "wrong", token="not-the-token"))
    with pytest.raises(ApiException) as refused:
        wrong.list_node()
    assert refused.value.status == 401


def test_nodes_carry_the_recorded_labels_and_capacity(kube_cluster, tmp_path):
    core = _core(kube_cluster.kubeconfig(tmp_path / "kc"))
    served = {n.metadata.name: n for n in core.list_node().items}
    for name in ("gke", "eks"):
        for node in recorded(name)["items"]:
            live = served[node["metadata"]["name"]]
            assert live.metadata.labels == node["metadata"]["labels"]
            for resource in ("cpu", "memory", "nvidia.com/gpu"):
                assert live.status.capacity.get(resource) == node["status"]["capacity"].get(
                    resource
                ), (name, resource)
            ready = [c.status for c in live.status.conditions if c.type == "Ready"]
            assert ready == ["True"]
    h100 = served["gke-train-h100-pool-8d41e0c2-q2vz"]
    assert h100.metadata.labels["cloud.google.com/gke-accelerator"] == "nvidia-h100-80gb"
    assert h100.status.allocatable["nvidia.com/gpu"] == "8"


def _pending_pod(name: str, gpus: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "unused",
                    "command": ["/bin/sleep", "600"],
                    "resources": {"limits": {"nvidia.com/gpu": gpus}},
                }
            ],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        },
    }


def _wait_for(probe, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_a_pod_no_node_fits_gets_the_schedulers_reason(kube_cluster):
    rest = kube_cluster.rest
    rest.post("/api/v1/namespaces/default/pods", _pending_pod("too-many-gpus", "16"))
    try:

        def unschedulable():
            pod = rest.get("/api/v1/namespaces/default/pods/too-many-gpus")
            for condition in pod["status"].get("conditions") or []:
                if condition["type"] == "PodScheduled" and condition["status"] == "False":
                    return condition
            return None

        condition = _wait_for(unschedulable)
        assert condition["reason"] == "Unschedulable"
        assert condition["message"].startswith("0/12 nodes are available: ")
        assert "Insufficient nvidia.com/gpu" in condition["message"]
    finally:
        rest.delete("/api/v1/namespaces/default/pods/too-many-gpus")


def test_a_pod_runs_in_its_own_namespace_and_its_deletion_is_finished(kube_cluster):
    rest = kube_cluster.rest
    rest.post("/api/v1/namespaces/default/pods", _pending_pod("sleeper", "1"))

    def running():
        pod = rest.get("/api/v1/namespaces/default/pods/sleeper")
        return pod if pod["status"].get("phase") == "Running" else None

    try:
        pod = _wait_for(running)
        address = pod["status"]["podIP"]
        assert pod["status"]["hostIP"] == address
        assert address.startswith(f"10.244.{kube_cluster.network.slot}.")
        node = rest.get(f"/api/v1/nodes/{pod['spec']['nodeName']}")
        assert int(node["status"]["allocatable"]["nvidia.com/gpu"]) >= 1
        sandbox = kube_cluster.agent.running_pod("default", "sleeper").sandbox
        pid = sandbox.init_pid
        assert pid is not None
        assert Path(f"/proc/{pid}/cmdline").read_text().startswith("/bin/sleep")
    finally:
        rest.delete("/api/v1/namespaces/default/pods/sleeper")  # graceful: the agent ends it

    def gone():
        names = [p["metadata"]["name"] for p in rest.get("/api/v1/pods")["items"]]
        return "sleeper" not in names

    _wait_for(gone)
    assert sandbox.init_pid is None
    assert kube_cluster.agent.errors == []
