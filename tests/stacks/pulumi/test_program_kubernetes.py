"""The Kubernetes program under the mock runtime: pods with sshd, GPU requests, services."""

from __future__ import annotations

import subprocess

from pulumi_harness import is_secret, program, run_program, unsecret
from pulumi_specs import K8S_CPU, K8S_H100, K8S_T4_GKE, PUBLIC_KEY, catalog, context, spec

from skyform.stacks.pulumi.inputs import program_inputs
from skyform.stacks.pulumi.kubernetes.program import SSHD_SCRIPT

POD = "kubernetes:core/v1:Pod"
SERVICE = "kubernetes:core/v1:Service"


def run(cluster_spec, **ctx):
    return run_program(program("kubernetes", program_inputs(cluster_spec, context(**ctx))))


def pods(got):
    return sorted(got.of_type(POD), key=lambda r: r.name)


def container(pod):
    (only,) = pod.inputs["spec"]["containers"]
    return only


def test_gpu_pod_requests_equal_limits_and_select_gpu_nodes():
    got = run(spec(K8S_H100, nodes=2))
    assert [p.name for p in pods(got)] == ["node-0", "node-1"]
    for pod in pods(got):
        resources = container(pod)["resources"]
        wanted = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"}
        # Kubernetes rejects extended resources whose limit differs from the request.
        assert resources == {"requests": wanted, "limits": wanted}
        pod_spec = pod.inputs["spec"]
        assert pod_spec["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
        assert pod_spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]
        assert container(pod)["image"] == catalog().image_for(
            "kubernetes", None, "skypilot:custom-gpu-ubuntu-2204"
        )
    provider = got.of_type("pulumi:providers:kubernetes")[0].inputs
    assert provider["context"] == "lab"
    # no path of this machine's in the stack: each run reads its own KUBECONFIG
    assert provider["kubeconfig"] == ""


def test_gke_gpu_pods_use_the_gke_accelerator_label():
    got = run(spec(K8S_T4_GKE))
    (pod,) = pods(got)
    assert pod.inputs["spec"]["nodeSelector"] == {
        "cloud.google.com/gke-accelerator": "nvidia-tesla-t4"
    }


def test_cpu_pod_with_every_input():
    got = run(spec(K8S_CPU, labels={"team": "ml"}))
    (pod,) = pods(got)
    assert pod.provider == "kubernetes"
    labels = {"team": "ml", "skyform/cluster": "c1", "skyform/plan": "sha256_" + "ab" * 28}
    assert pod.inputs["metadata"] == {
        "name": "c1-0",
        "labels": {**labels, "skyform/rank": "0"},
        # one field manager for every run: an object a killed run made is taken over
        "annotations": {"pulumi.com/patchFieldManager": "skyform"},
    }
    assert pod.inputs["spec"] == {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "node",
                "image": catalog().image_for("kubernetes", None, "skypilot:custom-cpu-ubuntu-2204"),
                "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/sh", "-c", SSHD_SCRIPT],
                "ports": [{"containerPort": 22.0, "name": "ssh"}],
                "resources": {
                    "requests": {"cpu": "500m", "memory": "1536Mi"},
                    "limits": {"cpu": "500m", "memory": "1536Mi"},
                },
                "readinessProbe": {"tcpSocket": {"port": 22.0}, "periodSeconds": 5.0},
                "volumeMounts": [
                    {"name": "ssh-keys", "mountPath": "/etc/skyform/ssh", "readOnly": True},
                    {"name": "shm", "mountPath": "/dev/shm"},
                ],
            }
        ],
        "volumes": [
            {"name": "ssh-keys", "secret": {"secretName": "c1-ssh"}},
            {"name": "shm", "emptyDir": {"medium": "Memory"}},
        ],
    }
    provider = got.of_type("pulumi:providers:kubernetes")[0].inputs
    assert "context" not in provider  # the current context


def test_authorized_key_is_a_secret_mounted_into_every_pod():
    got = run(spec(K8S_CPU, nodes=2))
    secret = got.named("ssh-keys").inputs
    assert is_secret(secret["stringData"])  # the SDK marks Secret data secret itself
    assert unsecret(secret["stringData"]) == {"authorized_keys": PUBLIC_KEY}
    assert secret["metadata"]["name"] == "c1-ssh"


def test_sshd_entrypoint_installs_keys_and_serves_key_only_root_login():
    assert "install -m 600 /etc/skyform/ssh/authorized_keys /root/.ssh/authorized_keys" in (
        SSHD_SCRIPT
    )
    assert "PasswordAuthentication=no" in SSHD_SCRIPT
    assert "PermitRootLogin=prohibit-password" in SSHD_SCRIPT
    assert "apt-get install -y -qq openssh-server rsync" in SSHD_SCRIPT
    check = subprocess.run(["sh", "-n", "-c", SSHD_SCRIPT], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_one_nodeport_service_per_pod_for_ssh_and_task_ports():
    got = run(spec(K8S_CPU, nodes=2, ports=["8080", "6006"]))
    services = sorted(got.of_type(SERVICE), key=lambda r: r.name)
    assert [s.name for s in services] == ["ssh-0", "ssh-1"]
    for rank, service in enumerate(services):
        assert service.inputs["metadata"]["name"] == f"c1-{rank}-ssh"
        assert service.inputs["spec"] == {
            "type": "NodePort",
            "selector": {"skyform/cluster": "c1", "skyform/rank": str(rank)},
            "ports": [
                {"name": "ssh", "port": 22.0, "targetPort": 22.0, "protocol": "TCP"},
                {"name": "p6006", "port": 6006.0, "targetPort": 6006.0},
                {"name": "p8080", "port": 8080.0, "targetPort": 8080.0},
            ],
        }
    ports = container(pods(got)[0])["ports"]
    assert [p["containerPort"] for p in ports] == [22.0, 6006.0, 8080.0]


def test_outputs_reach_pods_at_their_node_on_the_node_port():
    got = run(spec(K8S_CPU, nodes=2))
    assert got.outputs == {
        "nodes": [
            {"rank": 0, "id": "default/c1-0", "public_ip": "192.168.1.1",
             "private_ip": "10.244.0.1", "port": 30022, "node_ports": {}},
            {"rank": 1, "id": "default/c1-1", "public_ip": "192.168.1.2",
             "private_ip": "10.244.0.2", "port": 30044, "node_ports": {}},
        ],
        "ssh_user": "root",
    }  # fmt: skip


def discovered(context: str, accelerator: str, count: int):
    """The offer and input context the engine builds for a plan made on discovered nodes."""
    from skyform.config import Config
    from skyform.plan.catalog import load_catalog
    from skyform.plan.specs import placed
    from skyform.stacks.pulumi.context import input_context

    cat = load_catalog(Config())
    (offer,) = cat.query(cloud="kubernetes", accelerator=accelerator, accelerator_count=count)
    ctx = input_context("kubernetes", config=Config(), catalog=cat, context_name=context)
    return placed(offer), ctx


def test_gpu_pods_select_the_gpu_label_the_context_nodes_carry(kubeconfig):
    kubeconfig({"ml": "eks"}, current="ml")
    offer, ctx = discovered("ml", "V100", 4)
    got = run_program(program("kubernetes", program_inputs(spec(offer), ctx)))
    (pod,) = pods(got)
    assert pod.inputs["spec"]["nodeSelector"] == {
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-v100"  # EKS, not a GKE/GFD guess
    }
    assert got.of_type("pulumi:providers:kubernetes")[0].inputs["context"] == "ml"


def test_gpu_pods_accept_every_label_value_of_the_nodes_that_hold_them(kubeconfig, kube_api):
    from kubeapi import recorded

    mixed = recorded("gfd")
    for node in mixed["items"]:
        if node["metadata"]["name"] == "dgx-2":
            node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A100-80GB-PCIe"
    kube_api.serve("mixed", mixed)
    kubeconfig({"lab": "mixed"}, current="lab")
    offer, ctx = discovered("lab", "A100-80GB", 8)
    assert offer.capacity == 2
    (pod,) = pods(run_program(program("kubernetes", program_inputs(spec(offer), ctx))))
    assert "nodeSelector" not in pod.inputs["spec"]
    required = pod.inputs["spec"]["affinity"]["nodeAffinity"]
    (term,) = required["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {
            "key": "nvidia.com/gpu.product",
            "operator": "In",
            "values": ["NVIDIA-A100-80GB-PCIe", "NVIDIA-A100-SXM4-80GB"],
        }
    ]
