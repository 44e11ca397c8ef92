"""skyform's GCP path through the real Pulumi engine, as test_pulumi_aws.py does for AWS: the
VMs the test provider makes boot real machines whose login user and key come from the
instance's `ssh-keys` metadata (as GCP's guest agent makes them), the job runs there, a VM
deleted out of band is noticed by `status --refresh`, and `down` destroys the stack. The
provider's configuration (project, region, zone) and the secret outputs the SDK declares
(encrypted in the state with skyform's passphrase) are checked too."""

from __future__ import annotations

import json

import pytest
from testprovider import stackfiles
from testprovider.harness import GCP_PROJECT

pytestmark = pytest.mark.engine

INSTANCE = "gcp:compute/instance:Instance"
FIREWALL = "gcp:compute/firewall:Firewall"

TASK = """\
name: on-gcp
num_nodes: 2
resources: {infra: gcp/us-central1, instance_type: n2-standard-4, use_spot: true,
            disk_size: 120, ports: [8080, 9000-9010]}
run: echo "rank $SKYFORM_NODE_RANK of $SKYFORM_NUM_NODES on $(hostname) as $(whoami)"
"""


def _address(outputs: dict) -> str:
    return outputs["networkInterfaces"][0]["accessConfigs"][0]["natIp"]


def test_launch_on_gcp_refresh_after_a_spot_loss_then_down(sky, test_cloud, skyform_home, tmp_path):
    cloud = test_cloud.cloud
    (tmp_path / "task.yaml").write_text(TASK)
    launched = sky("launch", "task.yaml", "-y")
    live = {r["name"]: r for r in cloud.resources(INSTANCE)}
    hosts = [_address(live[f"node-{rank}"]["outputs"]) for rank in (0, 1)]
    for rank, host in enumerate(hosts):
        hostname = "ip-" + host.replace(".", "-")
        assert f"rank {rank} of 2 on {hostname} as skyform" in launched.stdout

    zone = json.loads(sky("status", "--json").stdout)[0]["infra"].rsplit("/", 1)[-1]
    skyform_key = (skyform_home / "keys" / "skyform-key.pub").read_text().strip()
    instances = cloud.created(INSTANCE)
    assert sorted(instances) == ["node-0", "node-1"]
    for name, vm in sorted(instances.items()):
        assert vm["name"] == f"on-gcp-{name[-1]}"
        assert (vm["machineType"], vm["zone"]) == ("n2-standard-4", zone)
        assert vm["scheduling"] == {
            "automaticRestart": False,
            "instanceTerminationAction": "DELETE",
            "onHostMaintenance": "TERMINATE",
            "preemptible": True,
            "provisioningModel": "SPOT",
        }
        disk = vm["bootDisk"]["initializeParams"]
        assert disk["size"] == 120 and disk["image"]
        assert vm["metadata"]["ssh-keys"].strip() == f"skyform:{skyform_key}"
        assert vm["metadata"]["enable-oslogin"] == "FALSE"
        assert vm["labels"]["skyform-cluster"] == "on-gcp"
        assert vm["tags"] == ["skyform-on-gcp"]
        assert vm["networkInterfaces"] == [{"accessConfigs": [{}], "network": "default"}]
    firewalls = cloud.created(FIREWALL)
    assert firewalls["ssh"]["allows"] == [{"ports": ["22", "8080", "9000-9010"], "protocol": "tcp"}]
    assert firewalls["ssh"]["sourceRanges"] == ["0.0.0.0/0"]
    assert firewalls["internal"]["allows"] == [{"protocol": "all"}]
    assert firewalls["internal"]["sourceTags"] == ["skyform-on-gcp"]
    # Project, region and zone are the provider's configuration.
    assert {
        (c["inputs"]["project"], c["inputs"]["region"], c["inputs"]["zone"])
        for c in cloud.calls("Configure")
    } == {(GCP_PROJECT, "us-central1", zone)}

    status = json.loads(sky("status", "--json").stdout)[0]
    assert [(n["host"], n["user"], n["node_id"]) for n in status["nodes"]] == [
        (hosts[0], "skyform", live["node-0"]["id"]),
        (hosts[1], "skyform", live["node-1"]["id"]),
    ]
    # The SDK declares a VM's effectiveLabels secret: the state holds them encrypted with
    # skyform's passphrase, and only that passphrase opens them.
    vm0 = stackfiles.resource(stackfiles.latest(skyform_home, "on-gcp"), INSTANCE, "node-0")
    assert set(vm0["outputs"]["effectiveLabels"]) == {
        "4dabf18193072939515e22adb298388d",
        "ciphertext",
    }
    passphrase = (skyform_home / "secrets" / "pulumi-passphrase").read_text().strip()
    opened = stackfiles.export(skyform_home, "on-gcp", passphrase)
    assert opened.returncode == 0, opened.stderr
    shown = stackfiles.resource(json.loads(opened.stdout)["deployment"], INSTANCE, "node-0")
    assert shown["outputs"]["effectiveLabels"]["plaintext"]  # the CLI shows it decrypted
    assert json.loads(shown["outputs"]["effectiveLabels"]["plaintext"]) == vm0["outputs"]["labels"]
    wrong = stackfiles.export(skyform_home, "on-gcp", "not-the-passphrase")
    assert wrong.returncode != 0 and "incorrect passphrase" in wrong.stderr

    # A spot VM deleted by GCP (instanceTerminationAction DELETE): gone, its machine stopped.
    test_cloud.terminate(INSTANCE, "node-0")
    refreshed = json.loads(sky("status", "--refresh", "--json").stdout)[0]
    assert [(n["rank"], n["alive"], n["detail"]) for n in refreshed["health"]["nodes"]] == [
        (0, False, "preempted: the spot instance is gone"),
        (1, True, "RUNNING"),
    ]

    sky("down", "-y", "on-gcp")
    assert cloud.resources() == []
    assert test_cloud.host.machines == {}
    assert not stackfiles.checkpoint(skyform_home, "on-gcp").exists()
