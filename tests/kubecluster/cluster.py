"""A Kubernetes test cluster without containers: etcd + kube-apiserver on loopback
(controlplane.py), Node objects from recorded GKE/EKS clusters (nodes.py), a pod network of
network namespaces (podnet.py) and a node agent that runs the pods (agent.py).

    with KubeCluster(engine_bin(), run_dir) as cluster:
        cluster.kubeconfig(path, context="gke_proj_us-central1_test")
        cluster.rest.get("/api/v1/nodes")
"""

from __future__ import annotations

import base64
import shutil
import time
from pathlib import Path

import yaml

from kubecluster.agent import NodeAgent
from kubecluster.controlplane import ControlPlane
from kubecluster.nodes import recorded_nodes, register
from kubecluster.podnet import PodNetwork
from kubecluster.rest import Rest

KUBE_VERSION = "v1.37.2"


def missing_requirements() -> str | None:
    import os

    if os.geteuid() != 0:
        return "the Kubernetes test cluster needs root (network namespaces, mounts)"
    absent = [t for t in ("ip", "unshare", "ssh-keygen", "/usr/sbin/sshd") if not shutil.which(t)]
    if absent:
        return f"{', '.join(absent)} not installed (apt-get install iproute2 openssh-server)"
    return None


class KubeCluster:
    def __init__(self, bin_dir: Path, run_dir: Path, nodes: list[dict] | None = None) -> None:
        self.bin_dir, self.run = bin_dir, run_dir
        self.nodes = nodes if nodes is not None else recorded_nodes()
        self.network: PodNetwork | None = None
        self.control: ControlPlane | None = None
        self.agent: NodeAgent | None = None
        self.started_in = 0.0  # seconds from start() to a cluster that runs pods

    def __enter__(self) -> KubeCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        began = time.monotonic()
        reason = missing_requirements()
        if reason:
            raise RuntimeError(reason)
        self.run.mkdir(parents=True, exist_ok=True)
        self.network = PodNetwork()
        # Cluster IPs are only allocated (no kube-proxy): nothing is ever sent to them.
        self.control = ControlPlane(self.bin_dir, self.run, f"10.96.{self.network.slot}.0/24")
        self.control.start()
        register(self.rest, self.nodes, self.network.gateway, KUBE_VERSION)
        self.agent = NodeAgent(self.rest, self.network, self.run)
        self.agent.start()
        self.started_in = time.monotonic() - began

    def close(self) -> None:
        if self.agent is not None:
            self.agent.stop()
        if self.control is not None:
            self.control.stop()
        if self.network is not None:
            self.network.close()

    # --- what tests use -----------------------------------------------------------------

    @property
    def rest(self) -> Rest:
        assert self.control is not None, "the cluster is not started"
        return Rest(self.control.port, self.control.token, str(self.control.certs.ca))

    @property
    def url(self) -> str:
        assert self.control is not None
        return self.control.url

    @property
    def token(self) -> str:
        assert self.control is not None
        return self.control.token

    def kubeconfig(
        self, path: Path, context: str = "skyform-test", token: str | None = None
    ) -> Path:
        """A kubeconfig with one context (current) for this cluster, admin by token."""
        assert self.control is not None
        ca = base64.b64encode(self.control.certs.ca.read_bytes()).decode()
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": context,
                    "cluster": {"server": self.url, "certificate-authority-data": ca},
                }
            ],
            "users": [{"name": context, "user": {"token": token or self.token}}],
            "contexts": [
                {
                    "name": context,
                    "context": {"cluster": context, "user": context, "namespace": "default"},
                }
            ],
            "current-context": context,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc))
        path.chmod(0o600)
        return path
