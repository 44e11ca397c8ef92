"""An AWS cluster's program inputs: key pair, security group and one EC2 instance per node."""

from __future__ import annotations

from skyform.plan.model import ClusterSpec, PlannedBucket
from skyform.stacks.pulumi import disks, naming
from skyform.stacks.pulumi.cloud import InputContext
from skyform.stacks.pulumi.inputs import (
    cluster_buckets,
    container_init,
    node_image,
    port_ranges,
)

AWS_SSH_USER = "ubuntu"  # the user of SkyPilot's (and Ubuntu's) AMIs


def aws_inputs(spec: ClusterSpec, ctx: InputContext) -> dict:
    offer = spec.offer
    zone = offer.zone if offer.zone and offer.zone != offer.region else None
    # Zone names start with the region (us-east-1a, us-west-2-lax-1a); IDs do not (use1-az4).
    named = zone is not None and zone.startswith(offer.region)
    tags = naming.aws_tags(spec.labels)
    tags.update({"skyform:cluster": spec.name})
    if ctx.plan_digest:
        tags["skyform:plan"] = ctx.plan_digest
    return {
        "cloud": "aws",
        "name": spec.name,
        "region": offer.region,
        "zone_id": zone if zone and not named else None,
        "zone_name": zone if named else None,
        "instance_type": offer.instance_type,
        "num_nodes": spec.num_nodes,
        "image": node_image(spec, ctx),
        "spot": offer.spot,
        "disk": disks.aws_root_volume(spec.disk_size, spec.disk_tier),
        "ports": port_ranges(spec.ports),
        "ssh_user": AWS_SSH_USER,
        "init_script": container_init(spec, AWS_SSH_USER),
        "ssh_public_key": ctx.ssh_public_key,
        "key_name": f"skyform-{spec.name}-{ctx.ssh_key_id}",
        "tags": tags,
        "buckets": [
            {"name": b.name, "tags": {**tags, "skyform:bucket": b.name}}
            for b in cluster_buckets(spec, ctx)
        ]
        or None,  # left out when there are none: the inputs of other clusters keep their shape
    }


def aws_storage_inputs(bucket: PlannedBucket, ctx: InputContext) -> dict:
    """A persistent S3 bucket's storage stack (`register_storage`)."""
    tags = {"skyform:bucket": bucket.name, "skyform:clusters": "_".join(bucket.used_by)}
    if ctx.plan_digest:
        tags["skyform:plan"] = ctx.plan_digest
    spec = {"name": bucket.name, "region": bucket.region, "tags": tags}
    return {"cloud": "aws", "bucket": spec}
