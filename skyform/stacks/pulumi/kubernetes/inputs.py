"""A Kubernetes cluster's program inputs: one pod (and SSH service) per node."""

from __future__ import annotations

from skyform.errors import StackError
from skyform.plan.model import ClusterSpec
from skyform.stacks.pulumi import naming
from skyform.stacks.pulumi.cloud import InputContext
from skyform.stacks.pulumi.inputs import cloud_labels, node_image, port_ranges

SSH_PORT = 22
MAX_K8S_PORTS = 100  # ports are listed one by one on pods and services
K8S_SSH_USER = "root"


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
    labels = cloud_labels(
        spec, ctx, "Kubernetes", naming.k8s_label_key, naming.k8s_label_value, "/"
    )
    return {
        "cloud": "kubernetes",
        "name": spec.name,
        "context": context,
        "namespace": None,  # the context's namespace
        "num_nodes": spec.num_nodes,
        "pod_names": [naming.dns_name(spec.name, str(r)) for r in range(spec.num_nodes)],
        "secret_name": naming.dns_name(spec.name, "ssh"),
        "image": node_image(spec, ctx),
        "cpus": k8s_quantity_cpu(offer.vcpus or 1.0),
        "memory": k8s_quantity_memory(offer.memory_gib or 1.0),
        "gpu": gpu,
        "ports": ports,
        "ssh_user": K8S_SSH_USER,
        "ssh_public_key": ctx.ssh_public_key,
        "labels": labels,
    }
