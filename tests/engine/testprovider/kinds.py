"""What each resource type of skyform's AWS and GCP programs looks like once "created": its
id, the outputs the real provider computes (the ones skyform reads, and a few more so the
shape is the provider's), which input changes force a replacement, and the answers to the
invokes the programs make.

Addresses: an instance gets a public and a private IPv4 derived from a hash of its URN (a
restart's from the time), unless a machine host boots a real machine for it (machines.py),
whose one address is then both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from testprovider.cloud import reveal

AWS_ACCOUNT = "123456789012"
DEFAULT_VPC = "vpc-0d1e2f3a4b5c6d7e8"


def _hex(seed: str, n: int = 17) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:n]


@dataclass(frozen=True)
class Created:
    id: str
    outputs: dict[str, Any]


@dataclass(frozen=True)
class Kind:
    type: str
    create: Callable[[str, dict, dict], Created]  # (urn, inputs, provider config) -> Created
    replace_on: frozenset[str] = frozenset()  # top-level inputs whose change replaces
    instance: bool = False  # a machine: gets an address, may be terminated out of band


def _serial(seed: str) -> int:
    """A small number for addresses: distinct per resource, stable per URN within a run."""
    return int(_hex(seed, 4), 16) % 200 + 10


# -- AWS ---------------------------------------------------------------------------------------


def _aws_region(config: dict) -> str:
    return str(reveal(config.get("region")) or "us-east-1")


def aws_key_pair(urn: str, inputs: dict, config: dict) -> Created:
    name = inputs["keyName"]
    outputs = dict(inputs)
    outputs.update(
        arn=f"arn:aws:ec2:{_aws_region(config)}:{AWS_ACCOUNT}:key-pair/{name}",
        keyPairId=f"key-{_hex(urn)}",
        fingerprint=_hex("fp" + str(reveal(inputs.get("publicKey"))), 32),
        keyType="ed25519",
        tagsAll=inputs.get("tags") or {},
    )
    return Created(id=name, outputs=outputs)


def aws_security_group(urn: str, inputs: dict, config: dict) -> Created:
    sg = f"sg-{_hex(urn)}"
    outputs = dict(inputs)
    outputs.update(
        arn=f"arn:aws:ec2:{_aws_region(config)}:{AWS_ACCOUNT}:security-group/{sg}",
        ownerId=AWS_ACCOUNT,
        name=inputs.get("name") or f"terraform-{_hex(urn, 24)}",
        vpcId=inputs.get("vpcId") or DEFAULT_VPC,
        revokeRulesOnDelete=False,
        tagsAll=inputs.get("tags") or {},
    )
    return Created(id=sg, outputs=outputs)


def aws_instance(urn: str, inputs: dict, config: dict) -> Created:
    region = _aws_region(config)
    n = _serial(urn)
    instance_id = f"i-{_hex(urn)}"
    outputs = dict(inputs)
    outputs.update(
        arn=f"arn:aws:ec2:{region}:{AWS_ACCOUNT}:instance/{instance_id}",
        availabilityZone=f"{region}d",
        subnetId=inputs.get("subnetId") or "subnet-0abc",
        publicIp=f"54.{n}.0.{n}",
        privateIp=f"172.31.{n}.{n}",
        publicDns=f"ec2-54-{n}-0-{n}.compute-1.amazonaws.com",
        privateDns=f"ip-172-31-{n}-{n}.ec2.internal",
        primaryNetworkInterfaceId=f"eni-{_hex('eni' + urn)}",
        instanceState="running",
        tagsAll=inputs.get("tags") or {},
    )
    return Created(id=instance_id, outputs=outputs)


def aws_instance_state(urn: str, inputs: dict, config: dict) -> Created:
    return Created(id=str(inputs["instanceId"]), outputs=dict(inputs))


def aws_bucket(urn: str, inputs: dict, config: dict) -> Created:
    name = inputs.get("bucket") or f"terraform-{_hex(urn, 24)}"
    outputs = dict(inputs)
    outputs.update(
        bucket=name,
        arn=f"arn:aws:s3:::{name}",
        bucketDomainName=f"{name}.s3.amazonaws.com",
        region=_aws_region(config),
        tagsAll=inputs.get("tags") or {},
    )
    return Created(id=name, outputs=outputs)


def aws_public_access_block(urn: str, inputs: dict, config: dict) -> Created:
    return Created(id=str(inputs["bucket"]), outputs=dict(inputs))


def aws_get_subnet(args: dict, config: dict, cloud) -> dict:
    """`aws.ec2.get_subnet`: the default subnet of the zone the filters name."""
    region = _aws_region(config)
    filters = {f["name"]: f["values"][0] for f in args.get("filters") or []}
    zone = filters.get("availability-zone") or f"{region}d"
    zone_id = filters.get("availability-zone-id") or "use1-az4"
    return {
        "id": f"subnet-{_hex(zone + zone_id)}",
        "vpcId": DEFAULT_VPC,
        "availabilityZone": zone,
        "availabilityZoneId": zone_id,
        "cidrBlock": "172.31.0.0/20",
        "defaultForAz": True,
        "mapPublicIpOnLaunch": True,
        "filters": args.get("filters") or [],
    }


# -- GCP ---------------------------------------------------------------------------------------


def _gcp_project(inputs: dict, config: dict) -> str:
    return str(inputs.get("project") or reveal(config.get("project")) or "")


def gcp_firewall(urn: str, inputs: dict, config: dict) -> Created:
    project = _gcp_project(inputs, config)
    name = inputs["name"]
    outputs = dict(inputs)
    outputs.update(
        project=project,
        selfLink=f"https://www.googleapis.com/compute/v1/projects/{project}/global/firewalls/{name}",
        creationTimestamp="2026-12-04T12:00:00.000-08:00",
        direction="INGRESS",
        priority=1000,
    )
    return Created(id=f"projects/{project}/global/firewalls/{name}", outputs=outputs)


def gcp_instance(urn: str, inputs: dict, config: dict) -> Created:
    project = _gcp_project(inputs, config)
    zone = inputs.get("zone") or reveal(config.get("zone"))
    name = inputs["name"]
    n = _serial(urn)
    interfaces = []
    for i, nic in enumerate(inputs.get("networkInterfaces") or []):
        configs = [dict(c, natIp=f"34.{n}.0.{n}") for c in nic.get("accessConfigs") or []]
        interfaces.append(
            dict(nic, name=f"nic{i}", networkIp=f"10.128.{n}.{n}", accessConfigs=configs)
        )
    status = inputs.get("desiredStatus") or "RUNNING"
    outputs = dict(inputs)
    outputs.update(
        project=project,
        zone=zone,
        instanceId=str(int(_hex(urn, 15), 16)),
        selfLink=f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/instances/{name}",
        cpuPlatform="Intel Cascade Lake",
        networkInterfaces=interfaces,
        currentStatus=status,
        effectiveLabels=inputs.get("labels") or {},
    )
    return Created(id=f"projects/{project}/zones/{zone}/instances/{name}", outputs=outputs)


def gcp_bucket(urn: str, inputs: dict, config: dict) -> Created:
    project = _gcp_project(inputs, config)
    name = inputs["name"]
    outputs = dict(inputs)
    outputs.update(
        project=project,
        selfLink=f"https://www.googleapis.com/storage/v1/b/{name}",
        url=f"gs://{name}",
        storageClass="STANDARD",
    )
    return Created(id=name, outputs=outputs)


KINDS = {
    k.type: k
    for k in (
        Kind("aws:ec2/keyPair:KeyPair", aws_key_pair, frozenset({"keyName", "publicKey"})),
        Kind(
            "aws:ec2/securityGroup:SecurityGroup",
            aws_security_group,
            frozenset({"name", "vpcId", "description"}),
        ),
        Kind(
            "aws:ec2/instance:Instance",
            aws_instance,
            frozenset({"ami", "keyName", "subnetId", "instanceMarketOptions", "availabilityZone"}),
            instance=True,
        ),
        Kind(
            "aws:ec2transitgateway/instanceState:InstanceState",
            aws_instance_state,
            frozenset({"instanceId"}),
        ),
        Kind("aws:s3/bucket:Bucket", aws_bucket, frozenset({"bucket"})),
        Kind(
            "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
            aws_public_access_block,
            frozenset({"bucket"}),
        ),
        Kind("gcp:compute/firewall:Firewall", gcp_firewall, frozenset({"name", "network"})),
        Kind(
            "gcp:compute/instance:Instance",
            gcp_instance,
            frozenset({"name", "zone", "bootDisk", "networkInterfaces"}),
            instance=True,
        ),
        Kind("gcp:storage/bucket:Bucket", gcp_bucket, frozenset({"name", "location"})),
    )
}


INSTANCE_FIELDS = frozenset(
    {
        "ami", "arn", "availabilityZone", "instanceState", "instanceType", "keyName",
        "privateDns", "privateIp", "publicDns", "publicIp", "subnetId", "tags",
        "vpcSecurityGroupIds",
    }
)  # fmt: skip


def aws_get_instance(args: dict, config: dict, cloud) -> dict:
    """`aws.ec2.get_instance` by id: the instance as EC2 describes it now."""
    wanted = args.get("instanceId")
    for found in cloud.resources("aws:ec2/instance:Instance"):
        if found["id"] == wanted:
            # the data source's own fields (its nested blocks are lists, not the resource's
            # objects: the SDK checks the types)
            shown = {k: v for k, v in found["outputs"].items() if k in INSTANCE_FIELDS}
            return {**shown, "id": wanted, "instanceId": wanted}
    raise LookupError(
        "Your query returned no results. Please change your search criteria and try again."
    )


INVOKES: dict[str, Callable[[dict, dict, Any], dict]] = {
    "aws:ec2/getSubnet:getSubnet": aws_get_subnet,
    "aws:ec2/getInstance:getInstance": aws_get_instance,
}


# -- power (skyform stop / start) --------------------------------------------------------------


def is_running(type_: str, outputs: dict) -> bool:
    if type_ == "gcp:compute/instance:Instance":
        return outputs.get("currentStatus") != "TERMINATED"
    return outputs.get("instanceState") != "stopped"


def _powered(type_: str, outputs: dict, running: bool, public_ip: str) -> dict:
    out = dict(outputs)
    if type_ == "gcp:compute/instance:Instance":
        out["currentStatus"] = "RUNNING" if running else "TERMINATED"
        nics = [dict(nic) for nic in out.get("networkInterfaces") or []]
        if nics:
            configs = nics[0].get("accessConfigs") or []
            nics[0]["accessConfigs"] = [dict(c, natIp=public_ip) for c in configs]
        out["networkInterfaces"] = nics
    else:
        state = "running" if running else "stopped"
        out.update(instanceState=state, publicIp=public_ip, publicDns="")
    return out


def powered_off(type_: str, outputs: dict) -> dict:
    """A stopped instance: its ephemeral public address is released (AWS keeps the private
    one; a GCP VM keeps its internal IP); the disk stays."""
    return _powered(type_, outputs, False, "")


def powered_on(type_: str, outputs: dict, seed: str) -> dict:
    """A started instance: a new ephemeral public address (`seed` makes it differ)."""
    n = _serial(seed)
    first = 35 if type_ == "gcp:compute/instance:Instance" else 3
    return _powered(type_, outputs, True, f"{first}.{n}.0.{n}")
