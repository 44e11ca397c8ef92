"""Kubernetes offers come from what each context's nodes really have, read through the API.

Every test talks to tests/kubeapi.py, a real HTTP server on loopback serving recorded
`/api/v1/nodes` answers (GKE, EKS, and a plain cluster labelled by the NVIDIA GPU operator),
through a kubeconfig pointing at it.
"""

from __future__ import annotations

import json
import socket
import time

import pytest
from helpers import closed_port
from kubeapi import recorded

from skyform.config import Config, KubernetesSettings
from skyform.plan.catalog import load_catalog

GKE = "gke_proj_us-central1-a_train"


def catalog(**settings):
    return load_catalog(Config(kubernetes=KubernetesSettings(**settings)))


def k8s(cat, **query):
    return cat.query(cloud="kubernetes", **query)


def test_without_a_kubeconfig_there_is_no_kubernetes_offer_and_the_reason_says_so(
    monkeypatch, tmp_path
):
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    cat = catalog()
    assert k8s(cat, accelerator="A100", accelerator_count=8) == []
    assert k8s(cat, accelerator_count=0) == []
    assert cat.kubernetes.why_not(["kubernetes"]) == [
        "no kubeconfig: KUBECONFIG is not set and ~/.kube/config does not exist"
    ]


def test_gke_nodes_give_pods_of_the_requested_size_on_the_gpus_they_carry(kubeconfig):
    kubeconfig({GKE: "gke"}, current=GKE)
    cat = catalog()
    (t4,) = k8s(cat, accelerator="t4", accelerator_count=1)
    assert (t4.cloud, t4.region, t4.context, t4.zone) == ("kubernetes", GKE, GKE, None)
    assert (t4.instance_type, t4.vcpus, t4.memory_gib) == ("4CPU--16GB--1xT4", 4, 16)
    assert (t4.capacity, t4.gpu_memory_gib, t4.hourly_price) == (2, 16.0, 0.0)
    (h100,) = k8s(cat, accelerator="H100", accelerator_count=8)
    assert (h100.instance_type, h100.capacity) == ("32CPU--128GB--8xH100", 1)
    assert k8s(cat, accelerator="A100", accelerator_count=8) == []
    assert k8s(cat, accelerator="H100", accelerator_count=16) == []
    assert cat.kubernetes.miss_notes() == [
        f"no context fits a pod (A100:8, 32 CPU, 128 GiB): {GKE}: no node has A100 "
        "(GPUs: H100:8, T4:1)",
        f"no context fits a pod (H100:16, 64 CPU, 256 GiB): {GKE}: no node has 16× H100 "
        "(at most 8 per node)",
    ]
    # CPU pods avoid the GPU pools (tainted nvidia.com/gpu); 3.92 allocatable CPUs hold no 4
    assert [o.instance_type for o in k8s(cat, accelerator_count=0, cpus=2)] == ["2CPU--2GB"]
    assert k8s(cat, accelerator_count=0, cpus=4) == []


def test_eks_gpu_type_comes_from_the_accelerator_label_or_the_instance_type(kubeconfig):
    kubeconfig({"eks": "eks"}, current="eks")
    cat = catalog()
    (v100,) = k8s(cat, accelerator="V100", accelerator_count=4)
    assert v100.capacity == 2  # the third p3.8xlarge is NotReady
    assert v100.instance_type == "16CPU--64GB--4xV100"
    # g5.xlarge has no GPU label: its instance type names the GPU (A10G, from the AWS catalog)
    assert k8s(cat, accelerator="A10G", accelerator_count=1) == []  # 4 CPU do not fit 3.92
    (a10g,) = k8s(cat, accelerator="A10G", accelerator_count=1, cpus=3, memory=12)
    assert (a10g.instance_type, a10g.capacity) == ("3CPU--12GB--1xA10G", 1)
    assert cat.kubernetes.selector("eks", "A10G", 1, 3, 12) == (
        "node.kubernetes.io/instance-type",
        ("g5.xlarge",),
    )
    assert cat.kubernetes.selector("eks", "V100", 4, 16, 64) == (
        "k8s.amazonaws.com/accelerator",
        ("nvidia-tesla-v100",),
    )


def test_gpu_operator_labels_name_the_gpu_and_unschedulable_nodes_are_left_out(kubeconfig):
    kubeconfig({"lab": "gfd"}, current="lab")
    cat = catalog()
    (a100,) = k8s(cat, accelerator="A100-80GB", accelerator_count=8)
    assert (a100.instance_type, a100.capacity, a100.gpu_memory_gib) == (
        "32CPU--128GB--8xA100-80GB",
        2,
        80.0,
    )
    (a100_1,) = k8s(cat, accelerator="A100-80GB", accelerator_count=1)
    assert a100_1.capacity == 16  # 8 GPUs on each of the two DGX nodes
    (rtx,) = k8s(cat, accelerator="RTX4090", accelerator_count=2)  # NVIDIA-GeForce-RTX-4090
    assert rtx.gpu_memory_gib == pytest.approx(23.988)
    (snap,) = cat.kubernetes.snapshot(["kubernetes"]).contexts
    # 7 nodes over three pages of the server's answer; the control plane and the cordoned
    # node take no pods
    assert snap.summary().endswith(
        "left out: 1 cordoned, 1 tainted node-role.kubernetes.io/control-plane"
    )
    assert sum(t.nodes for t in snap.types) == 5


def test_a_pod_only_arm64_nodes_hold_is_an_arm64_offer(kubeconfig, kube_api):
    arm_only = recorded("gfd")
    arm_only["items"] = [n for n in arm_only["items"] if n["metadata"]["name"] == "arm-1"]
    kube_api.serve("arm", arm_only)
    kubeconfig({"arm": "arm"}, current="arm")
    (offer,) = k8s(catalog(), accelerator_count=0, cpus=32)
    assert (offer.arch, offer.capacity) == ("arm64", 2)


def test_contexts_are_the_current_one_unless_allowed_contexts_says_otherwise(kubeconfig):
    kubeconfig({GKE: "gke", "eks": "eks", "lab": "gfd", "ssh-pool": "gfd"}, current="lab")
    regions = {o.region for o in k8s(catalog(), accelerator_count=0, cpus=2)}
    assert regions == {"lab"}
    everywhere = {o.region for o in k8s(catalog(allowed_contexts="all"), accelerator_count=0)}
    assert everywhere == {GKE, "eks", "lab"}  # `all` leaves SkyPilot's ssh-* pools out
    listed = catalog(allowed_contexts=["eks", "gone"])
    assert {o.region for o in k8s(listed, accelerator_count=0)} == {"eks"}
    assert listed.kubernetes.why_not(["kubernetes"]) == [
        "context gone in kubernetes.allowed_contexts is not in the kubeconfig"
    ]
    assert catalog(allowed_contexts=[]).kubernetes.why_not(["kubernetes"]) == [
        "kubernetes.allowed_contexts (config.yaml) is empty"
    ]
    # a context the task names is planned on even when it is not the current one...
    assert {o.region for o in k8s(catalog(), context="eks", accelerator_count=0)} == {"eks"}
    # ...unless allowed_contexts lists others only
    assert k8s(catalog(allowed_contexts=["lab"]), context="eks", accelerator_count=0) == []


def test_unreachable_and_unauthorized_contexts_are_left_out_with_the_reason(kubeconfig):
    kubeconfig(
        {"lab": "gfd", "down": "gfd", "locked": "gfd"},
        tokens={"locked": "wrong-token"},
        servers={"down": f"http://127.0.0.1:{closed_port()}"},
    )
    cat = catalog(allowed_contexts="all")
    assert {o.region for o in k8s(cat, accelerator_count=0)} == {"lab"}
    notes = cat.kubernetes.why_not(["kubernetes"])
    assert notes[0] == "context down is not usable: unreachable (Connection refused)"
    assert notes[1].startswith(
        "context locked is not usable: the API server refused to list nodes (HTTP 401"
    )


def test_a_context_that_never_answers_is_left_out_after_the_timeout(kubeconfig):
    mute = socket.socket()  # accepts connections (the backlog), never answers
    mute.bind(("127.0.0.1", 0))
    mute.listen(8)
    try:
        kubeconfig({"mute": "gfd"}, servers={"mute": f"http://127.0.0.1:{mute.getsockname()[1]}"})
        started = time.monotonic()
        cat = catalog(allowed_contexts="all", timeout=0.5, capacity_ttl=0)
        assert k8s(cat, accelerator_count=0) == []
        assert time.monotonic() - started < 5
        first = cat.kubernetes.snapshot(["kubernetes"])
        again = catalog(allowed_contexts="all", timeout=0.5, capacity_ttl=0)
        second = again.kubernetes.snapshot(["kubernetes"], refresh=True)
    finally:
        mute.close()
    # the same words and digest every time: they go into plan files
    assert first.notes == second.notes == ("context mute is not usable: unreachable (timed out)",)
    assert first.digest == second.digest


def test_capacity_is_cached_with_its_time_and_read_again_after_the_ttl(
    kubeconfig, kube_api, skyform_home
):
    kubeconfig({"lab": "gfd"}, current="lab")
    assert k8s(catalog(), accelerator="A100-80GB", accelerator_count=8)
    assert kube_api.node_requests("gfd") == 1
    cache = json.loads((skyform_home / "kubernetes" / "nodes.json").read_text())
    entry = cache["contexts"]["lab"]
    assert entry["error"] is None and len(entry["nodes"]) == 7
    assert isinstance(entry["fetched_at"], float)
    assert (skyform_home / "kubernetes" / "nodes.json").stat().st_mode & 0o777 == 0o600
    # a second plan within the TTL asks the API nothing
    assert k8s(catalog(), accelerator="A100-80GB", accelerator_count=8)
    assert kube_api.node_requests("gfd") == 1
    # the cluster lost a DGX node: a plan after the TTL sees it
    fewer = recorded("gfd")
    fewer["items"] = [n for n in fewer["items"] if n["metadata"]["name"] != "dgx-2"]
    kube_api.serve("gfd", fewer)
    assert k8s(catalog(), accelerator="A100-80GB", accelerator_count=8)[0].capacity == 2
    (offer,) = k8s(catalog(capacity_ttl=0), accelerator="A100-80GB", accelerator_count=8)
    assert (offer.capacity, kube_api.node_requests("gfd")) == (1, 2)


def test_a_cache_entry_of_another_cluster_or_a_corrupt_cache_is_not_used(
    kubeconfig, kube_api, skyform_home
):
    kubeconfig({"lab": "gfd"}, current="lab")
    assert k8s(catalog(), accelerator="A100-80GB", accelerator_count=8)
    # same context name, now pointing at the EKS cluster: read again, not the cached lab
    kubeconfig({"lab": "eks"}, current="lab")
    assert k8s(catalog(), accelerator="V100", accelerator_count=4)
    assert kube_api.node_requests("eks") == 1
    (skyform_home / "kubernetes" / "nodes.json").write_text('{"version": 1, "contexts": [')
    assert k8s(catalog(), accelerator="V100", accelerator_count=4)
    assert kube_api.node_requests("eks") == 2
