"""The test cluster itself, read as skyform reads a cluster: through the kubernetes client
with a kubeconfig (a real kube-apiserver with token authentication)."""

from __future__ import annotations

import contextlib
import threading
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


SILENT_SERVER = """
import socket, time
server = socket.create_server(("0.0.0.0", 8080))
held = []
while True:
    held.append(server.accept()[0])  # reads nothing, answers nothing
"""


CLIENTS = 40
REQUEST = b"GET / HTTP/1.1\r\nHost: silent\r\n\r\n"


def test_connections_through_a_node_port_end_with_their_pod(kube_cluster):
    """Requests in flight through a node port when the pod is deleted: the node (here the
    pod's own namespace) ends the connections, as a real node's kernel does when the pod's
    process dies; the client is never left waiting on an address that went silent."""
    rest = kube_cluster.rest
    pod = _pending_pod("silent", "1")
    container = pod["spec"]["containers"][0]
    container["command"] = ["/usr/bin/python3", "-c", SILENT_SERVER]
    container["readinessProbe"] = {"tcpSocket": {"port": 8080}}
    pod["metadata"]["labels"] = {"app": "silent"}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "silent"},
        "spec": {"type": "NodePort", "selector": {"app": "silent"},
                 "ports": [{"port": 8080, "targetPort": 8080}]},
    }  # fmt: skip
    rest.post("/api/v1/namespaces/default/pods", pod)
    made = rest.post("/api/v1/namespaces/default/services", service)
    node_port = made["spec"]["ports"][0]["nodePort"]

    def ready():
        found = rest.get("/api/v1/namespaces/default/pods/silent")
        ready = [c for c in found["status"].get("conditions") or [] if c["type"] == "Ready"]
        return found if ready and ready[0]["status"] == "True" else None

    try:
        address = _wait_for(ready)["status"]["hostIP"]
        clients = [_wait_for(lambda: _connected(address, node_port)) for _ in range(CLIENTS)]
        stop = threading.Event()

        def more_clients() -> None:  # and new requests while the pod goes
            while not stop.is_set():
                client = _connected(address, node_port)
                if client is not None:
                    clients.append(client)
                    with contextlib.suppress(OSError):
                        client.sendall(REQUEST)
                time.sleep(0.01)

        for client in clients:
            client.sendall(REQUEST)
        time.sleep(0.5)  # relayed to the pod, which never answers
        arriving = threading.Thread(target=more_clients)
        arriving.start()
        rest.delete("/api/v1/namespaces/default/pods/silent")
        _wait_for(lambda: _connected(address, node_port) is None, 10)
        stop.set()
        arriving.join()
        began = time.monotonic()
        silent = 0
        for client in clients:
            client.settimeout(max(0.1, began + 10 - time.monotonic()))
            try:
                assert client.recv(1024) == b""  # closed by the node
            except ConnectionResetError:
                pass
            except TimeoutError:
                silent += 1
            client.close()
        assert silent == 0, f"{silent} of {len(clients)} connections outlived their pod, silent"
    finally:
        rest.delete("/api/v1/namespaces/default/services/silent")
        if any(p["metadata"]["name"] == "silent" for p in rest.get("/api/v1/pods")["items"]):
            rest.delete("/api/v1/namespaces/default/pods/silent")
    assert kube_cluster.agent.errors == []


def _connected(address: str, port: int):
    import socket

    try:
        return socket.create_connection((address, port), timeout=1)
    except OSError:
        return None  # the node port opens at the agent's next round
