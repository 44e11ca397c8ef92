"""A cluster's placement -> the plain dict its Pulumi program registers resources from.

This is where skyform's knowledge goes (catalog images, disk tiers, GPU names, label rules);
the programs in `programs/` only turn the dict into resources. The dict is JSON-able and is
also what an exported project keeps in `Pulumi.<stack>.yaml` (`<project>:cluster`), so the
inline and the exported program see exactly the same inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from skyform.errors import StackError
from skyform.plan.model import Action, ClusterSpec, PlannedBucket
from skyform.stacks.pulumi import disks, naming
from skyform.stacks.pulumi.images import ImageLookup, has_nvidia_gpu, resolve_image

CLOUDS = ("aws", "gcp", "kubernetes")
CLOUD_STORE = {"aws": "s3", "gcp": "gcs"}
SSH_PORT = 22
MAX_K8S_PORTS = 100  # ports are listed one by one on pods and services
AWS_SSH_USER = "ubuntu"  # the user of SkyPilot's (and Ubuntu's) AMIs
GCP_SSH_USER = "skyform"  # created on the VM by the guest agent from the ssh-keys metadata
K8S_SSH_USER = "root"


@dataclass(frozen=True)
class InputContext:
    """What the inputs need besides the spec (the engine and `export` fill it in)."""

    ssh_public_key: str
    ssh_key_id: str  # short id of the key, part of the AWS key pair name
    image_lookup: ImageLookup
    k8s_gpus: Mapping[str, Any] = field(default_factory=dict)  # name -> GpuInfo
    plan_digest: str | None = None
    gcp_project: str | None = None
    k8s_gke: bool | None = None  # None: guess from the context name (gke_...)
    # (context, GPU, count, cpus, memory) -> (node label, values) of the nodes that hold such a
    # pod, from the capacity discovered at plan time; None when not known
    k8s_node_label: Callable[..., tuple[str, tuple[str, ...]] | None] | None = None
    buckets: tuple[PlannedBucket, ...] = ()  # the plan's buckets (the cluster's are chosen)


def program_inputs(spec: ClusterSpec, ctx: InputContext) -> dict:
    """The input dict; optional entries are left out rather than null (programs use .get)."""
    builders = {"aws": aws_inputs, "gcp": gcp_inputs, "kubernetes": kubernetes_inputs}
    build = builders.get(spec.offer.cloud)
    if build is None:
        raise StackError(f"the pulumi engine does not provision {spec.offer.cloud!r} clusters")
    return _without_nulls(build(spec, ctx))


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def port_ranges(ports: list[str]) -> list[list[int]]:
    """Task `ports` ("8080", "10000-10010") -> sorted, merged [from, to] pairs."""
    ranges = []
    for raw in ports:
        text = str(raw).strip()
        first, _, last = text.partition("-")
        try:
            pair = [int(first), int(last or first)]
        except ValueError:
            raise StackError(
                f"port {text!r} is not a number or a range a-b", "Fix `resources.ports`."
            ) from None
        if not 1 <= pair[0] <= pair[1] <= 65535:
            raise StackError(f"port range {text!r} is outside 1-65535", "Fix `resources.ports`.")
        ranges.append(pair)
    merged: list[list[int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return merged


def _labels(spec: ClusterSpec, ctx: InputContext, cloud: str, key_fn, value_fn, sep: str):
    """The task's labels made valid for the cloud, plus skyform's own (cluster, plan)."""
    labels = naming.sanitized_labels(spec.labels, key_fn, value_fn, cloud)
    labels[f"skyform{sep}cluster"] = value_fn(spec.name)
    plan = naming.plan_label(ctx.plan_digest)
    if plan:
        labels[f"skyform{sep}plan"] = plan
    return labels


def _image(spec: ClusterSpec, ctx: InputContext) -> str:
    offer = spec.offer
    region = offer.region if offer.cloud == "aws" else None
    return resolve_image(
        offer.cloud,
        region,
        spec.image_id,
        accelerator=offer.accelerator,
        arch=offer.arch,
        lookup=ctx.image_lookup,
    )


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
        "image": _image(spec, ctx),
        "spot": offer.spot,
        "disk": disks.aws_root_volume(spec.disk_size, spec.disk_tier),
        "ports": port_ranges(spec.ports),
        "ssh_user": AWS_SSH_USER,
        "ssh_public_key": ctx.ssh_public_key,
        "key_name": f"skyform-{spec.name}-{ctx.ssh_key_id}",
        "tags": tags,
        "buckets": [
            {"name": b.name, "tags": {**tags, "skyform:bucket": b.name}}
            for b in cluster_buckets(spec, ctx)
        ]
        or None,  # left out when there are none: the inputs of other clusters keep their shape
    }


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
    labels = _labels(spec, ctx, "GCP", naming.gcp_label_key, naming.gcp_label_value, "-")
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
        "image": _image(spec, ctx),
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
        "ssh_public_key": ctx.ssh_public_key,
        "labels": labels,
        "buckets": [
            {"name": b.name, "labels": {**labels, "skyform-bucket": naming.gcp_label_value(b.name)}}
            for b in cluster_buckets(spec, ctx)
        ]
        or None,
    }


def k8s_quantity_memory(gib: float) -> str:
    mib = round(gib * 1024)
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def k8s_quantity_cpu(cpus: float) -> str:
    milli = round(cpus * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def is_gke_context(context: str | None) -> bool:
    return bool(context) and str(context).startswith("gke_")


def _gpu_inputs(spec: ClusterSpec, ctx: InputContext) -> dict:
    """GPU count and where such a pod can go: the GPU label the context's nodes carry (as
    discovered), else the label GKE or the NVIDIA GPU operator would put on such nodes."""
    offer = spec.offer
    count = int(offer.accelerator_count)
    found = None
    if ctx.k8s_node_label is not None and offer.context:
        found = ctx.k8s_node_label(
            offer.context, offer.accelerator, offer.accelerator_count, offer.vcpus, offer.memory_gib
        )
    if found is not None:
        key, values = found
        if len(values) == 1:
            return {"count": count, "node_selector": {key: values[0]}}
        return {"count": count, "node_affinity": {"key": key, "values": list(values)}}
    info = ctx.k8s_gpus.get(offer.accelerator or "")
    gke = ctx.k8s_gke if ctx.k8s_gke is not None else is_gke_context(offer.context)
    if gke and info is not None and info.gke_label:
        selector = {"cloud.google.com/gke-accelerator": info.gke_label}
    elif info is not None and info.product_label:
        selector = {"nvidia.com/gpu.product": info.product_label}
    else:
        raise StackError(
            f"cluster {spec.name}: no Kubernetes node label is known for GPU {offer.accelerator}",
            "Add it to the catalog's k8s_gpu_labels.csv, or plan for another GPU.",
        )
    return {"count": count, "node_selector": selector}


def kubernetes_inputs(spec: ClusterSpec, ctx: InputContext) -> dict:
    offer = spec.offer
    context = offer.context or None
    gpu = None
    if offer.accelerator:
        gpu = _gpu_inputs(spec, ctx)
    ports = [p for a, b in port_ranges(spec.ports) for p in range(a, b + 1) if p != SSH_PORT]
    if len(ports) > MAX_K8S_PORTS:
        raise StackError(
            f"cluster {spec.name}: {len(ports)} ports requested; skyform exposes at most "
            f"{MAX_K8S_PORTS} per pod on Kubernetes",
            "Ask for fewer `resources.ports`.",
        )
    labels = _labels(spec, ctx, "Kubernetes", naming.k8s_label_key, naming.k8s_label_value, "/")
    return {
        "cloud": "kubernetes",
        "name": spec.name,
        "context": context,
        "namespace": None,  # the context's namespace
        "num_nodes": spec.num_nodes,
        "pod_names": [naming.dns_name(spec.name, str(r)) for r in range(spec.num_nodes)],
        "secret_name": naming.dns_name(spec.name, "ssh"),
        "image": _image(spec, ctx),
        "cpus": k8s_quantity_cpu(offer.vcpus or 1.0),
        "memory": k8s_quantity_memory(offer.memory_gib or 1.0),
        "gpu": gpu,
        "ports": ports,
        "ssh_user": K8S_SSH_USER,
        "ssh_public_key": ctx.ssh_public_key,
        "labels": labels,
    }


def cluster_buckets(spec: ClusterSpec, ctx: InputContext) -> list[PlannedBucket]:
    """The buckets the cluster's stack owns: created by this plan for this cluster, in its
    cloud's store and region, and `persistent: false` (so they go when the stack goes). A
    persistent bucket gets a storage stack of its own (`storage_inputs`)."""
    store = CLOUD_STORE.get(spec.offer.cloud)
    return [
        b
        for b in ctx.buckets
        if b.action is Action.CREATE
        and not b.persistent
        and b.store == store
        and b.region == spec.offer.region
        and spec.name in b.used_by
    ]


def storage_inputs(
    bucket: PlannedBucket,
    *,
    plan_digest: str | None = None,
    gcp_project: str | None = None,
    keep: bool = True,
) -> dict:
    """The input dict of a bucket's storage stack (aws or gcp `register_storage`). `keep`:
    protected and never emptied by Pulumi (a persistent bucket); False for a shared
    `persistent: false` bucket, and for the last update before `storage delete` destroys it."""
    cloud = {v: k for k, v in CLOUD_STORE.items()}.get(bucket.store)
    if cloud is None or bucket.region is None:
        raise StackError(f"bucket {bucket.uri} has no Pulumi storage program (store, region)")
    users = "_".join(bucket.used_by)
    if cloud == "aws":
        tags = {"skyform:bucket": bucket.name, "skyform:clusters": users}
        if plan_digest:
            tags["skyform:plan"] = plan_digest
        spec = {"name": bucket.name, "region": bucket.region, "tags": tags}
        return {"cloud": "aws", "keep": keep, "bucket": spec}
    labels = {"skyform-bucket": naming.gcp_label_value(bucket.name)}
    labels["skyform-clusters"] = naming.gcp_label_value(users)
    plan = naming.plan_label(plan_digest)
    if plan:
        labels["skyform-plan"] = plan
    spec = {"name": bucket.name, "region": bucket.region, "labels": labels}
    return _without_nulls({"cloud": "gcp", "project": gcp_project, "keep": keep, "bucket": spec})
