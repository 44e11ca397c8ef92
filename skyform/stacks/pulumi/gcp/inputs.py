"""A GCP cluster's program inputs: firewall rules and one Compute Engine VM per node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skyform.errors import StackError
from skyform.plan.model import ClusterSpec, PlannedBucket
from skyform.spec.accelerators import has_nvidia_gpu
from skyform.stacks.pulumi import disks, naming
from skyform.stacks.pulumi.cloud import InputContext
from skyform.stacks.pulumi.inputs import (
    cloud_labels,
    cluster_buckets,
    container_init,
    node_image,
    port_ranges,
    without_nulls,
)

GCP_SSH_USER = "skyform"  # created on the VM by the guest agent from the ssh-keys metadata


def gcp_accelerator_type(name: str, gpus: Mapping[str, Any]) -> str:
    """skyform's GPU name -> GCE accelerator type (nvidia-tesla-v100, nvidia-l4 ...)."""
    label = getattr(gpus.get(name), "gke_label", None)
    if label:
        return str(label)  # GKE's accelerator label values are the GCE type names
    return f"nvidia-tesla-{name.lower()}"


def gcp_inputs(spec: ClusterSpec, ctx: InputContext) -> dict:
    offer = spec.offer
    if offer.accelerator and offer.accelerator.startswith("tpu-"):
        raise StackError(
            f"cluster {spec.name}: TPU placements ({offer.accelerator}) are not provisioned "
            "by skyform's pulumi engine yet",
            "Plan again with GPU or CPU resources for this task.",
        )
    if not offer.zone:
        raise StackError(f"cluster {spec.name}: a GCP placement needs a zone, got none")
    gpu = has_nvidia_gpu(offer.accelerator)
    # Only N1 takes attachable GPUs; a2/a3/a4/g2 machine types carry theirs implicitly.
    attach = gpu and offer.instance_type.startswith("n1-")
    labels = cloud_labels(spec, ctx, "GCP", naming.gcp_label_key, naming.gcp_label_value, "-")
    return {
        "cloud": "gcp",
        "name": spec.name,
        "project": ctx.gcp_project,
        "region": offer.region,
        "zone": offer.zone,
        "machine_type": offer.instance_type,
        "num_nodes": spec.num_nodes,
        "instance_names": [naming.gcp_name(spec.name, str(r)) for r in range(spec.num_nodes)],
        "firewall_names": {
            "ssh": naming.gcp_name("skyform", spec.name, "ssh"),
            "internal": naming.gcp_name("skyform", spec.name, "internal"),
        },
        "network_tag": naming.gcp_name("skyform", spec.name),
        "image": node_image(spec, ctx),
        "spot": offer.spot,
        "gpu": gpu,
        "accelerator": {
            "type": gcp_accelerator_type(offer.accelerator or "", ctx.k8s_gpus),
            "count": int(offer.accelerator_count),
        }
        if attach
        else None,
        "disk": disks.gcp_boot_disk(
            offer.instance_type, offer.vcpus, spec.disk_size, spec.disk_tier
        ),
        "ports": [f"{a}-{b}" if a != b else str(a) for a, b in port_ranges(spec.ports)],
        "ssh_user": GCP_SSH_USER,
        "init_script": container_init(spec, GCP_SSH_USER),
        "ssh_public_key": ctx.ssh_public_key,
        "labels": labels,
        "buckets": [
            {"name": b.name, "labels": {**labels, "skyform-bucket": naming.gcp_label_value(b.name)}}
            for b in cluster_buckets(spec, ctx)
        ]
        or None,
    }


def gcp_storage_inputs(bucket: PlannedBucket, ctx: InputContext) -> dict:
    """A persistent GCS bucket's storage stack (`register_storage`)."""
    labels = {"skyform-bucket": naming.gcp_label_value(bucket.name)}
    labels["skyform-clusters"] = naming.gcp_label_value("_".join(bucket.used_by))
    plan = naming.plan_label(ctx.plan_digest)
    if plan:
        labels["skyform-plan"] = plan
    spec = {"name": bucket.name, "region": bucket.region, "labels": labels}
    return without_nulls({"cloud": "gcp", "project": ctx.gcp_project, "bucket": spec})
