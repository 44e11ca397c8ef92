"""The GCP program under the mock runtime, including the API rules the SDK does not check."""

from __future__ import annotations

import re

import pytest
from pulumi_harness import program, run_program
from pulumi_specs import GCP_A2, GCP_N1_V100, GCP_N2, PUBLIC_KEY, catalog, context, spec

from skyform.stacks.pulumi.inputs import program_inputs

INSTANCE = "gcp:compute/instance:Instance"
LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")


def run(cluster_spec, **ctx):
    return run_program(program("gcp", program_inputs(cluster_spec, context(**ctx))))


def nodes(got):
    return sorted(got.of_type(INSTANCE), key=lambda r: r.name)


def test_on_demand_cpu_vm_with_every_input():
    got = run(spec(GCP_N2, labels={"team": "ml"}))
    provider = got.of_type("pulumi:providers:gcp")[0].inputs
    assert (provider["project"], provider["region"], provider["zone"]) == (
        "my-project",
        "europe-west4",
        "europe-west4-b",
    )
    (node,) = nodes(got)
    assert node.provider == "gcp"
    image = catalog().image_for("gcp", None, "skypilot:custom-cpu-ubuntu-2204")
    assert node.inputs == {
        "name": "c1-0",
        "machineType": "n2-standard-8",
        "zone": "europe-west4-b",
        "bootDisk": {
            "autoDelete": True,
            "initializeParams": {"image": image, "size": 256.0, "type": "pd-balanced"},
        },
        "networkInterfaces": [{"network": "default", "accessConfigs": [{}]}],
        "scheduling": {
            "provisioningModel": "STANDARD",
            "preemptible": False,
            "automaticRestart": True,
            "onHostMaintenance": "MIGRATE",
        },
        "metadata": {"ssh-keys": f"skyform:{PUBLIC_KEY}", "enable-oslogin": "FALSE"},
        "labels": {
            "team": "ml",
            "skyform-cluster": "c1",
            "skyform-plan": "sha256_" + "ab" * 28,
        },
        "tags": ["skyform-c1"],
        "serviceAccount": {"scopes": ["cloud-platform"]},
    }


def test_spot_vms_get_every_setting_the_api_requires():
    got = run(spec(GCP_N1_V100, nodes=2))
    assert [n.name for n in nodes(got)] == ["node-0", "node-1"]
    for node in nodes(got):
        scheduling = node.inputs["scheduling"]
        # The API refuses SPOT unless preemptible, no automatic restart, TERMINATE on maintenance.
        assert scheduling == {
            "provisioningModel": "SPOT",
            "preemptible": True,
            "automaticRestart": False,
            "onHostMaintenance": "TERMINATE",
            "instanceTerminationAction": "DELETE",
        }
    assert [n.inputs["name"] for n in nodes(got)] == ["c1-0", "c1-1"]


def test_n1_gpus_are_guest_accelerators_and_force_terminate():
    got = run(spec(GCP_N1_V100.model_copy(update={"spot": False})))
    (node,) = nodes(got)
    assert node.inputs["guestAccelerators"] == [{"type": "nvidia-tesla-v100", "count": 2.0}]
    assert node.inputs["scheduling"]["onHostMaintenance"] == "TERMINATE"  # GPUs cannot migrate
    assert node.inputs["scheduling"]["automaticRestart"] is True
    assert node.inputs["metadata"]["install-nvidia-driver"] == "True"
    image = catalog().image_for("gcp", None, "skypilot:custom-gpu-ubuntu-2204")
    assert node.inputs["bootDisk"]["initializeParams"]["image"] == image


def test_fixed_gpu_machine_types_carry_their_gpus_implicitly():
    got = run(spec(GCP_A2))
    (node,) = nodes(got)
    assert "guestAccelerators" not in node.inputs
    assert node.inputs["machineType"] == "a2-highgpu-1g"
    assert node.inputs["scheduling"]["onHostMaintenance"] == "TERMINATE"
    image = catalog().image_for("gcp", None, "skypilot:custom-gpu-ubuntu-2204-cuda13")
    assert node.inputs["bootDisk"]["initializeParams"]["image"] == image


def test_labels_are_sanitized_to_gcp_rules():
    labels = {"Team": "ML Ops", "cost-center": "R&D/42", "9lives": "Yes"}
    got = run(spec(GCP_N2, name="Big_Train", labels=labels))
    node_labels = nodes(got)[0].inputs["labels"]
    assert node_labels == {
        "team": "ml_ops",
        "cost-center": "r_d_42",
        "l9lives": "yes",
        "skyform-cluster": "big_train",
        "skyform-plan": "sha256_" + "ab" * 28,
    }
    assert all(LABEL_KEY.match(k) and LABEL_VALUE.match(v) for k, v in node_labels.items())
    assert re.match(r"^[a-z]([-a-z0-9]*[a-z0-9])?$", nodes(got)[0].inputs["name"])


def test_firewalls_allow_ssh_task_ports_and_the_cluster_itself():
    got = run(spec(GCP_N2, ports=["8080", "6006-6010"]))
    ssh = got.named("ssh").inputs
    assert ssh == {
        "name": "skyform-c1-ssh",
        "network": "default",
        "description": "skyform cluster c1: SSH and task ports",
        "allows": [{"protocol": "tcp", "ports": ["22", "6006-6010", "8080"]}],
        "sourceRanges": ["0.0.0.0/0"],
        "targetTags": ["skyform-c1"],
    }
    internal = got.named("internal").inputs
    assert internal["allows"] == [{"protocol": "all"}]
    assert internal["sourceTags"] == internal["targetTags"] == ["skyform-c1"]


@pytest.mark.parametrize(
    ("offer", "tier", "disk"),
    [
        (GCP_N2, "high", {"type": "pd-ssd", "size": 500.0}),
        (GCP_N2.model_copy(update={"instance_type": "n2-standard-64", "vcpus": 64}), "ultra",
         {"type": "pd-extreme", "size": 500.0, "provisionedIops": 20000.0}),
        (GCP_A2, "low", {"type": "pd-standard", "size": 500.0}),
    ],
)  # fmt: skip
def test_boot_disk_size_and_tier(offer, tier, disk):
    got = run(spec(offer, disk_size=500, disk_tier=tier))
    params = dict(nodes(got)[0].inputs["bootDisk"]["initializeParams"])
    params.pop("image")
    assert params == disk


def test_project_falls_back_to_the_environment_when_unknown():
    got = run(spec(GCP_N2), gcp_project=None)
    assert "project" not in got.of_type("pulumi:providers:gcp")[0].inputs


def test_stack_outputs_carry_public_and_private_addresses():
    got = run(spec(GCP_N2, nodes=2))
    assert got.outputs["ssh_user"] == "skyform"
    assert [(n["public_ip"], n["private_ip"]) for n in got.outputs["nodes"]] == [
        ("34.0.0.1", "10.128.0.1"),
        ("34.0.0.2", "10.128.0.2"),
    ]
    assert got.outputs["nodes"][1]["id"] == "projects/p/zones/z/instances/c1-1"
