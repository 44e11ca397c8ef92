"""skyform's AWS path through the real Pulumi engine: `launch` plans, runs skyform's own AWS
program with the real CLI, which drives the test provider (tests/engine/testprovider) as it
would drive pulumi-resource-aws; each instance the provider makes boots a real machine with
sshd on port 22 of its own address and the key pair's key for `ubuntu`, so the job runs there
over SSH. Then an instance ends out of band, `status --refresh` notices, and `down` destroys
the stack. What the engine sent the provider is asserted as a cloud would receive it."""

from __future__ import annotations

import json

import pytest
from testprovider import stackfiles
from testprovider.harness import AWS_SECRET

pytestmark = pytest.mark.engine

INSTANCE = "aws:ec2/instance:Instance"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
KEY_PAIR = "aws:ec2/keyPair:KeyPair"

TASK = """\
name: on-aws
num_nodes: 2
resources: {infra: aws/us-east-1, instance_type: m7a.large, use_spot: true, disk_size: 100,
            ports: 8080}
setup: echo set-up-once
run: echo "rank $SKYFORM_NODE_RANK of $SKYFORM_NUM_NODES on $(hostname) as $(whoami)"
"""


def test_launch_on_aws_refresh_after_a_spot_loss_then_down(sky, test_cloud, skyform_home, tmp_path):
    cloud = test_cloud.cloud
    (tmp_path / "task.yaml").write_text(TASK)
    launched = sky("launch", "task.yaml", "-y")
    live = {r["name"]: r for r in cloud.resources(INSTANCE)}
    hosts = [live[f"node-{rank}"]["outputs"]["publicIp"] for rank in (0, 1)]
    for rank, host in enumerate(hosts):
        hostname = "ip-" + host.replace(".", "-")
        assert f"rank {rank} of 2 on {hostname} as ubuntu" in launched.stdout

    # What the engine asked the provider for, as EC2 would receive it.
    instances = cloud.created(INSTANCE)
    assert sorted(instances) == ["node-0", "node-1"]
    (key,) = cloud.created(KEY_PAIR).values()
    skyform_key = (skyform_home / "keys" / "skyform-key.pub").read_text().strip()
    assert key["publicKey"].strip() == skyform_key
    (group,) = cloud.created(SECURITY_GROUP).values()
    (group_id,) = [r["id"] for r in cloud.resources(SECURITY_GROUP)]
    for rank, node in sorted(instances.items()):
        assert node["instanceType"] == "m7a.large"
        assert node["ami"].startswith("ami-")
        assert node["instanceMarketOptions"] == {
            "marketType": "spot",
            "spotOptions": {
                "instanceInterruptionBehavior": "terminate",
                "spotInstanceType": "one-time",
            },
        }
        disk = node["rootBlockDevice"]
        assert (disk["volumeSize"], disk["volumeType"], disk["encrypted"]) == (100, "gp3", True)
        assert node["keyName"] == key["keyName"]
        assert node["vpcSecurityGroupIds"] == [group_id]
        assert node["tags"]["Name"] == f"on-aws-{rank[-1]}"
        assert node["tags"]["skyform:cluster"] == "on-aws"
        assert node["metadataOptions"]["httpTokens"] == "required"
    ingress = {(r["protocol"], r["fromPort"], r["toPort"]) for r in group["ingress"]}
    assert {("tcp", 22, 22), ("tcp", 8080, 8080), ("-1", 0, 0)} <= ingress
    assert [r["cidrBlocks"] for r in group["ingress"] if r["protocol"] == "tcp"] == [
        ["0.0.0.0/0"],
        ["0.0.0.0/0"],
    ]
    # The region is the provider's configuration; the zone is the default subnet looked up.
    assert {c["inputs"]["region"] for c in cloud.calls("Configure")} == {"us-east-1"}
    (lookup,) = cloud.calls("Invoke")
    zone = json.loads(sky("status", "--json").stdout)[0]["infra"].rsplit("/", 1)[-1]
    assert {"name": "availability-zone-id", "values": [zone]} in lookup["inputs"]["filters"]

    # The stack's outputs became the cluster's nodes.
    status = json.loads(sky("status", "--json").stdout)[0]
    assert status["stack"] == "skyform/on-aws"
    assert [(n["host"], n["port"], n["user"], n["node_id"]) for n in status["nodes"]] == [
        (hosts[0], 22, "ubuntu", live["node-0"]["id"]),
        (hosts[1], 22, "ubuntu", live["node-1"]["id"]),
    ]
    # The state is under skyform's passphrase; credentials never reach it (nor any file).
    latest = stackfiles.latest(skyform_home, "on-aws")
    assert latest["secrets_providers"]["type"] == "passphrase"
    assert stackfiles.files_holding(skyform_home, AWS_SECRET) == []

    # A spot interruption: the instance is gone from EC2, its machine stopped.
    test_cloud.terminate(INSTANCE, "node-1")
    refreshed = json.loads(sky("status", "--refresh", "--json").stdout)[0]
    assert [(n["rank"], n["alive"], n["detail"]) for n in refreshed["health"]["nodes"]] == [
        (0, True, "running"),
        (1, False, "preempted: the spot instance is gone"),
    ]

    down = sky("down", "-y", "on-aws")
    assert "removed stack skyform/on-aws" in down.stdout
    assert cloud.resources() == []  # nothing left in the cloud
    assert test_cloud.host.machines == {}
    assert not stackfiles.checkpoint(skyform_home, "on-aws").exists()
    assert json.loads(sky("status", "--json").stdout) == []
