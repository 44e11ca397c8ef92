"""The AWS program under the mock runtime: every input the engine would receive."""

from __future__ import annotations

import pytest
from pulumi_harness import program, run_program
from pulumi_specs import (
    AWS_G5,
    AWS_GRAVITON,
    AWS_M5,
    PLAN_DIGEST,
    PUBLIC_KEY,
    catalog,
    context,
    spec,
)

from skyform.stacks.pulumi.inputs import program_inputs

INSTANCE = "aws:ec2/instance:Instance"
ANYWHERE = ["0.0.0.0/0"]


def run(cluster_spec, **ctx):
    return run_program(program("aws", program_inputs(cluster_spec, context(**ctx))))


def test_on_demand_gpu_node_with_every_input():
    got = run(spec(AWS_G5, labels={"team": "ml"}))
    assert [r.type for r in got.resources].count(INSTANCE) == 1
    provider = got.of_type("pulumi:providers:aws")[0]
    assert provider.inputs["region"] == "us-east-1"
    (node,) = got.of_type(INSTANCE)
    tags = {"team": "ml", "skyform:cluster": "c1", "skyform:plan": PLAN_DIGEST}
    assert node.provider == "aws"
    assert node.inputs == {
        "ami": catalog().image_for("aws", "us-east-1", "skypilot:custom-gpu-ubuntu"),
        "associatePublicIpAddress": True,
        "instanceType": "g5.xlarge",
        "keyName": "skyform-c1-7f8fc1957094",
        "metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required"},
        "rootBlockDevice": {
            "deleteOnTermination": True,
            "encrypted": True,
            "iops": 3500.0,
            "throughput": 218.0,
            "volumeSize": 256.0,
            "volumeType": "gp3",
        },
        "subnetId": "subnet-0abc",
        "tags": {**tags, "Name": "c1-0", "skyform:rank": "0"},
        "vpcSecurityGroupIds": ["firewall-id"],
    }
    assert "instanceMarketOptions" not in node.inputs  # on-demand
    key = got.named("ssh-key")
    assert key.inputs == {
        "keyName": "skyform-c1-7f8fc1957094",
        "publicKey": PUBLIC_KEY,
        "tags": tags,
    }


def test_zone_id_resolves_to_the_default_subnet_of_that_zone():
    got = run(spec(AWS_G5))
    assert got.calls == [
        (
            "aws:ec2/getSubnet:getSubnet",
            {
                "filters": [
                    {"name": "availability-zone-id", "values": ["use1-az4"]},
                    {"name": "default-for-az", "values": ["true"]},
                ]
            },
        )
    ]
    assert got.named("firewall").inputs["vpcId"] == "vpc-0def"  # the subnet's VPC
    assert got.named("node-0").inputs["subnetId"] == "subnet-0abc"


def test_without_a_zone_aws_picks_the_subnet():
    got = run(spec(AWS_G5.model_copy(update={"zone": None})))
    assert got.calls == []
    node = got.named("node-0").inputs
    assert "subnetId" not in node and "associatePublicIpAddress" not in node
    assert "vpcId" not in got.named("firewall").inputs


def test_spot_nodes_use_one_time_requests_that_terminate():
    got = run(spec(AWS_M5, nodes=3))
    nodes = got.of_type(INSTANCE)
    assert sorted(n.name for n in nodes) == ["node-0", "node-1", "node-2"]
    for node in nodes:
        assert node.inputs["instanceMarketOptions"] == {
            "marketType": "spot",
            "spotOptions": {
                "instanceInterruptionBehavior": "terminate",
                "spotInstanceType": "one-time",
            },
        }
        assert node.inputs["instanceType"] == "m5.2xlarge"
        assert node.inputs["ami"] == catalog().image_for(
            "aws", "us-west-2", "skypilot:custom-cpu-ubuntu"
        )
    assert sorted(n.inputs["tags"]["skyform:rank"] for n in nodes) == ["0", "1", "2"]
    assert sorted(n.inputs["tags"]["Name"] for n in nodes) == ["c1-0", "c1-1", "c1-2"]


def test_security_group_opens_ssh_task_ports_and_intra_cluster_traffic():
    got = run(spec(AWS_G5, ports=["8888", "10000-10010"]))
    firewall = got.named("firewall").inputs
    assert firewall["ingress"] == [
        {"cidrBlocks": ANYWHERE, "fromPort": 22.0, "protocol": "tcp", "toPort": 22.0},
        {"fromPort": 0.0, "protocol": "-1", "self": True, "toPort": 0.0},
        {"cidrBlocks": ANYWHERE, "fromPort": 8888.0, "protocol": "tcp", "toPort": 8888.0},
        {"cidrBlocks": ANYWHERE, "fromPort": 10000.0, "protocol": "tcp", "toPort": 10010.0},
    ]
    # The provider drops AWS's implicit egress rule; without this the nodes are offline.
    assert firewall["egress"] == [
        {"cidrBlocks": ANYWHERE, "fromPort": 0.0, "protocol": "-1", "toPort": 0.0}
    ]


@pytest.mark.parametrize(
    ("tier", "device"),
    [
        ("low", {"volumeType": "standard", "volumeSize": 64.0}),
        ("high", {"volumeType": "gp3", "volumeSize": 64.0, "iops": 7000.0, "throughput": 437.0}),
        ("ultra", {"volumeType": "io2", "volumeSize": 64.0, "iops": 20000.0}),
    ],
)
def test_disk_size_and_tier(tier, device):
    got = run(spec(AWS_G5, disk_size=64, disk_tier=tier))
    root = got.named("node-0").inputs["rootBlockDevice"]
    assert root == {**device, "encrypted": True, "deleteOnTermination": True}


def test_arm_instances_boot_the_arm_image_and_image_id_wins():
    got = run(spec(AWS_GRAVITON))
    assert got.named("node-0").inputs["ami"] == catalog().image_for(
        "aws", "us-east-1", "skypilot:custom-cpu-ubuntu-arm64"
    )
    got = run(spec(AWS_GRAVITON, image_id="ami-0123456789abcdef0"))
    assert got.named("node-0").inputs["ami"] == "ami-0123456789abcdef0"


def test_stack_outputs_list_every_node_in_rank_order():
    got = run(spec(AWS_M5, nodes=2))
    assert got.outputs == {
        "nodes": [
            {"rank": 0, "id": "i-00000000000000000", "public_ip": "54.0.0.1",
             "private_ip": "172.31.0.1", "port": 22},
            {"rank": 1, "id": "i-00000000000000001", "public_ip": "54.0.0.2",
             "private_ip": "172.31.0.2", "port": 22},
        ],
        "ssh_user": "ubuntu",
    }  # fmt: skip


def test_no_plan_digest_no_plan_tag():
    got = run(spec(AWS_G5), plan_digest=None)
    assert "skyform:plan" not in got.named("node-0").inputs["tags"]
