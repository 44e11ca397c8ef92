"""The real Pulumi CLI and Kubernetes provider, driven by the Automation API with an inline
program, against the test cluster: a Secret, a Pod running sshd (as skyform's pods do) and a
NodePort Service; `up` waits for the pod to be Ready and the Service to have endpoints, SSH
reaches the pod through the node port, and `destroy` leaves nothing in the API."""

from __future__ import annotations

import subprocess
import time
import urllib.request

import paramiko
import pytest
from kubecluster.engine import engine_env

pytestmark = pytest.mark.engine

# What skyform's pods run (skyform/stacks/pulumi/kubernetes/program.py): sshd as the
# entrypoint, the authorized key from the mounted Secret.
SSHD = """set -e
mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh
install -m 600 /etc/keys/authorized_keys /root/.ssh/authorized_keys
ssh-keygen -A
exec /usr/sbin/sshd -D -e -o PermitRootLogin=prohibit-password -o PasswordAuthentication=no
"""


def smoke_program(public_key: str):
    def program() -> None:
        import pulumi
        import pulumi_kubernetes as k8s

        labels = {"app": "smoke"}
        secret = k8s.core.v1.Secret(
            "keys", metadata={"name": "smoke-keys"}, string_data={"authorized_keys": public_key}
        )
        pod = k8s.core.v1.Pod(
            "pod",
            metadata={"name": "smoke", "labels": labels},
            spec={
                "restart_policy": "Never",
                "containers": [
                    {
                        "name": "node",
                        "image": "debian:12",
                        "command": ["/bin/sh", "-c", SSHD],
                        "ports": [{"container_port": 22, "name": "ssh"}],
                        "readiness_probe": {"tcp_socket": {"port": 22}, "period_seconds": 5},
                        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                        "volume_mounts": [
                            {"name": "keys", "mount_path": "/etc/keys", "read_only": True}
                        ],
                    }
                ],
                "volumes": [{"name": "keys", "secret": {"secret_name": secret.metadata.name}}],
            },
        )
        service = k8s.core.v1.Service(
            "ssh",
            metadata={"name": "smoke-ssh"},
            spec={"type": "NodePort", "selector": labels, "ports": [{"name": "ssh", "port": 22}]},
        )
        pulumi.export("host_ip", pod.status.host_ip)
        pulumi.export("node_port", service.spec.ports[0].node_port)

    return program


@pytest.fixture
def engine(engine_bin_dir, kube_cluster, tmp_path, monkeypatch):
    """The real CLI offline, with a file backend, pointed at the test cluster."""
    env = engine_env(engine_bin_dir, tmp_path / "pulumi-home", f"file://{tmp_path / 'state'}")
    (tmp_path / "state").mkdir()
    env["PULUMI_CONFIG_PASSPHRASE"] = "test-passphrase"
    env["KUBECONFIG"] = str(kube_cluster.kubeconfig(tmp_path / "kubeconfig"))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def _user_objects(rest) -> dict[str, list[str]]:
    found = {}
    for kind in ("pods", "services", "secrets", "endpoints"):
        listed = rest.get(f"/api/v1/namespaces/default/{kind}")["items"]
        names = [o["metadata"]["name"] for o in listed]
        found[kind] = [n for n in names if n != "kubernetes"]
    return found


def test_up_ssh_and_destroy_through_the_real_engine(engine, engine_bin_dir, kube_cluster, tmp_path):
    from pulumi import automation as auto

    key_path = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key_path)], check=True)
    public_key = (tmp_path / "id_ed25519.pub").read_text()

    stack = auto.create_or_select_stack(
        stack_name="smoke",
        project_name="engine-smoke",
        program=smoke_program(public_key),
        opts=auto.LocalWorkspaceOptions(
            pulumi_home=engine["PULUMI_HOME"],
            env_vars=engine,
            pulumi_command=auto.PulumiCommand(root=str(engine_bin_dir.parent)),
        ),
    )
    try:
        result = stack.up(on_output=lambda _: None)
        assert result.summary.result == "succeeded"
        # The stack and the three objects (the default provider is not counted as a change).
        assert result.summary.resource_changes == {"create": 4}
        host, port = result.outputs["host_ip"].value, int(result.outputs["node_port"].value)

        pod = kube_cluster.rest.get("/api/v1/namespaces/default/pods/smoke")
        assert pod["status"]["phase"] == "Running" and pod["status"]["podIP"] == host
        endpoints = kube_cluster.rest.get("/api/v1/namespaces/default/endpoints/smoke-ssh")
        assert [a["ip"] for a in endpoints["subsets"][0]["addresses"]] == [host]

        ssh = paramiko.SSHClient()
        ssh.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        ssh.connect(
            host,
            port=port,
            username="root",
            key_filename=str(key_path),
            timeout=10,
            banner_timeout=10,
            auth_timeout=10,
            look_for_keys=False,
            allow_agent=False,
        )
        _, out, _ = ssh.exec_command("hostname; cat /root/.ssh/authorized_keys", timeout=10)
        assert out.read().decode().split("\n", 1) == ["smoke", public_key]
        ssh.close()

        destroyed = stack.destroy(on_output=lambda _: None)
        assert destroyed.summary.result == "succeeded"
        # The Endpoints go with their Service (the endpoints controller's part, a moment later).
        empty = {"pods": [], "services": [], "secrets": [], "endpoints": []}
        deadline = time.monotonic() + 10
        while _user_objects(kube_cluster.rest) != empty and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _user_objects(kube_cluster.rest) == empty
    finally:
        stack.workspace.remove_stack("smoke", force=True)
    assert kube_cluster.agent.errors == []


def test_skyforms_kubernetes_program_runs_on_the_test_cluster(
    engine, engine_bin_dir, kube_cluster, tmp_path
):
    """skyform's own program (what `launch` registers) through the real engine: two pods on
    GPU nodes, each reached by SSH at its hostIP and its Service's node port as root with the
    key from the Secret, and a task port reached through its node port."""
    from pulumi import automation as auto

    from skyform.stacks.pulumi.kubernetes.program import register

    key_path = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key_path)], check=True)
    cluster = {
        "cloud": "kubernetes",
        "name": "sky-real",
        "context": None,
        "namespace": None,
        "num_nodes": 2,
        "pod_names": ["sky-real-0", "sky-real-1"],
        "secret_name": "sky-real-ssh",
        "image": "ubuntu:22.04",
        "cpus": "2",
        "memory": "4Gi",
        "gpu": {
            "count": 1,
            "node_selector": {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"},
        },
        "ports": [8080],
        "ssh_user": "root",
        "ssh_public_key": (tmp_path / "id_ed25519.pub").read_text(),
        "labels": {"skyform/cluster": "sky-real"},
    }
    stack = auto.create_or_select_stack(
        stack_name="sky-real",
        project_name="skyform",
        program=lambda: register(cluster),
        opts=auto.LocalWorkspaceOptions(
            pulumi_home=engine["PULUMI_HOME"],
            env_vars=engine,
            pulumi_command=auto.PulumiCommand(root=str(engine_bin_dir.parent)),
        ),
    )
    try:
        nodes = stack.up(on_output=lambda _: None).outputs["nodes"].value
        assert [n["rank"] for n in nodes] == [0, 1]
        placed = {
            p["spec"]["nodeName"]
            for p in kube_cluster.rest.get("/api/v1/namespaces/default/pods")["items"]
        }
        assert placed == {"gke-train-t4-pool-3f9c2a1b-xk2p", "gke-train-t4-pool-3f9c2a1b-m7qd"}
        for node in nodes:
            ssh = paramiko.SSHClient()
            ssh.set_missing_host_key_policy(paramiko.AutoAddPolicy())
            ssh.connect(
                node["public_ip"],
                port=int(node["port"]),
                username="root",
                key_filename=str(key_path),
                timeout=10,
                banner_timeout=10,
                auth_timeout=10,
                look_for_keys=False,
                allow_agent=False,
            )
            # A task port: the job listens in the pod, a client comes through the node port.
            ssh.exec_command(
                "cd /tmp && echo rank-$(hostname) > index.html && "
                "exec python3 -m http.server 8080 >/dev/null 2>&1"
            )
            url = f"http://{node['public_ip']}:{node['node_ports']['8080']}/index.html"
            deadline = time.monotonic() + 10
            while True:
                try:
                    with urllib.request.urlopen(url, timeout=2) as answer:
                        assert answer.read().decode().strip() == f"rank-sky-real-{node['rank']}"
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            ssh.close()
        assert stack.destroy(on_output=lambda _: None).summary.result == "succeeded"
        assert kube_cluster.rest.get("/api/v1/namespaces/default/pods")["items"] == []
    finally:
        stack.workspace.remove_stack("sky-real", force=True)
    assert kube_cluster.agent.errors == []
