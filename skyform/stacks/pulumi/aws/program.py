"""One skyform cluster on AWS: N EC2 instances reachable over SSH.

Input: `cluster`, a plain dict (an exported project reads it from its `cluster` config):
  name, region, zone_id (an availability zone *ID* such as use1-az4) or zone_name, or neither;
  instance_type, num_nodes, image (AMI id), spot, disk {size_gb, type, iops, throughput},
  ports [[from, to], ...], ssh_user, ssh_public_key, key_name, tags; optional `power`
  ("stopped" | "running", from `skyform stop` / `start`): each instance's power state;
  optional `init_script`: the first-boot script (user data) of every node.
Resources: a key pair, a security group (SSH and the task's ports from anywhere, all traffic
between the cluster's nodes) and one instance per node, in the account's default subnet of the
chosen zone; the cluster's `persistent: false` buckets (`buckets` [{name, tags}], in the
cluster's region, emptied and deleted with the stack). Stack outputs: `nodes` (rank, id,
public_ip, private_ip, port), `ssh_user`. `register_storage` is the program of a storage stack:
one bucket (`bucket` {name, region, tags}; `keep`: protected, never emptied) that outlives
a cluster's stack.
"""

import pulumi
import pulumi_aws as aws

ANYWHERE = ["0.0.0.0/0"]


def default_subnet(cluster, provider):
    """The default subnet of the zone. Zone IDs (use1-az4) name the same physical zone in every
    account, zone names (us-east-1a) do not, hence the lookup by ID."""
    if cluster.get("zone_id"):
        zone_filter = {"name": "availability-zone-id", "values": [cluster["zone_id"]]}
    elif cluster.get("zone_name"):
        zone_filter = {"name": "availability-zone", "values": [cluster["zone_name"]]}
    else:
        return None  # no zone: AWS picks one of the default VPC's subnets
    return aws.ec2.get_subnet_output(
        filters=[zone_filter, {"name": "default-for-az", "values": ["true"]}],
        opts=pulumi.InvokeOptions(provider=provider),
    )


def root_block_device(disk):
    device = {
        "volume_size": disk["size_gb"],
        "volume_type": disk["type"],
        "encrypted": True,
        "delete_on_termination": True,
    }
    if disk.get("iops"):
        device["iops"] = disk["iops"]
    if disk.get("throughput"):
        device["throughput"] = disk["throughput"]
    return device


def market_options(spot):
    if not spot:
        return None
    # A one-time request that terminates on interruption: a preempted node is gone, and the
    # next `pulumi up` (or skyform's recovery) creates a new one.
    return {
        "market_type": "spot",
        "spot_options": {
            "spot_instance_type": "one-time",
            "instance_interruption_behavior": "terminate",
        },
    }


def security_group(cluster, subnet, opts):
    ingress = [
        {"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr_blocks": ANYWHERE},
        # Nodes of the cluster talk to each other on any port (NCCL, torch.distributed ...).
        {"protocol": "-1", "from_port": 0, "to_port": 0, "self": True},
    ]
    for low, high in cluster["ports"]:
        ingress.append(
            {"protocol": "tcp", "from_port": low, "to_port": high, "cidr_blocks": ANYWHERE}
        )
    return aws.ec2.SecurityGroup(
        "firewall",
        description="skyform cluster " + cluster["name"] + ": SSH, task ports, intra-cluster",
        vpc_id=subnet.vpc_id if subnet is not None else None,
        ingress=ingress,
        # Terraform-based providers drop AWS's implicit allow-all egress: restate it.
        egress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ANYWHERE}],
        tags=cluster["tags"],
        opts=opts,
    )


def bucket(spec, force_destroy, opts):
    """A private S3 bucket: every public access blocked, versioning off (S3's default: no
    versioning resource), deleted with its objects only when `force_destroy`."""
    made = aws.s3.Bucket(
        "bucket-" + spec["name"],
        bucket=spec["name"],
        force_destroy=force_destroy,
        tags=spec["tags"],
        opts=opts,
    )
    aws.s3.BucketPublicAccessBlock(
        "bucket-" + spec["name"] + "-private",
        bucket=made.id,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
        opts=opts,
    )
    return made


def register_storage(storage):
    spec = storage["bucket"]
    keep = storage.get("keep", True)  # persistent: protected, never emptied by Pulumi
    provider = aws.Provider("aws", region=spec["region"])
    made = bucket(spec, not keep, pulumi.ResourceOptions(provider=provider, protect=keep))
    pulumi.export("bucket", made.bucket)


def register(cluster):
    provider = aws.Provider("aws", region=cluster["region"])
    opts = pulumi.ResourceOptions(provider=provider)
    tags = cluster["tags"]
    for spec in cluster.get("buckets", []):
        bucket(spec, True, opts)
    key = aws.ec2.KeyPair(
        "ssh-key",
        key_name=cluster["key_name"],
        public_key=cluster["ssh_public_key"],
        tags=tags,
        opts=opts,
    )
    subnet = default_subnet(cluster, provider)
    firewall = security_group(cluster, subnet, opts)
    nodes = []
    for rank in range(cluster["num_nodes"]):
        node_tags = dict(tags)
        node_tags.update({"Name": cluster["name"] + "-" + str(rank), "skyform:rank": str(rank)})
        instance = aws.ec2.Instance(
            "node-" + str(rank),
            ami=cluster["image"],
            instance_type=cluster["instance_type"],
            key_name=key.key_name,
            subnet_id=subnet.id if subnet is not None else None,
            associate_public_ip_address=True if subnet is not None else None,
            vpc_security_group_ids=[firewall.id],
            root_block_device=root_block_device(cluster["disk"]),
            instance_market_options=market_options(cluster["spot"]),
            metadata_options={"http_tokens": "required", "http_endpoint": "enabled"},
            user_data=cluster.get("init_script"),
            tags=node_tags,
            opts=opts,
        )
        addresses = instance
        if cluster.get("power"):  # stopped: billing for compute ends, the EBS disk stays
            state = aws.ec2transitgateway.InstanceState(
                "node-" + str(rank) + "-state",
                instance_id=instance.id,
                state=cluster["power"],
                opts=opts,
            )
            # A stopped instance gives up its public address and a started one gets a new
            # one, while the instance's outputs keep what it had when Pulumi last read it:
            # read it again once its power state is set.
            addresses = aws.ec2.get_instance_output(
                instance_id=state.instance_id, opts=pulumi.InvokeOptions(provider=provider)
            )
        nodes.append(
            {
                "rank": rank,
                "id": instance.id,
                "public_ip": addresses.public_ip,
                "private_ip": addresses.private_ip,
                "port": 22,
            }
        )
    pulumi.export("nodes", nodes)
    pulumi.export("ssh_user", cluster["ssh_user"])
