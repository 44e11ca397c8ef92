"""What a Kubernetes context's nodes offer a pod, from the API's node objects (pure).

`node_record` keeps, per node, what planning needs from a `/api/v1/nodes` item: allocatable
CPU, memory and `nvidia.com/gpu`, readiness, cordon, NoSchedule/NoExecute taints and the labels
that name the GPU type and architecture. That compact record is what the cache stores.

`node_types` interprets records with the catalog's GPU names, as SkyPilot does:
- the GPU type comes from the first of these labels a node carries: `skypilot.co/accelerator`
  (SkyPilot's labeler), `cloud.google.com/gke-accelerator` (GKE: `nvidia-tesla-t4`,
  `nvidia-h100-80gb`), `k8s.amazonaws.com/accelerator` (EKS node groups, same value style as
  GKE), `karpenter.k8s.aws/instance-gpu-name` (`a10g`), `nvidia.com/gpu.product` (the NVIDIA
  GPU operator's feature discovery: `NVIDIA-A100-SXM4-80GB`), `gpu.nvidia.com/class`
  (CoreWeave), `nebius.com/gpu-name`; a node with GPUs but none of these is named by its
  instance type (`node.kubernetes.io/instance-type`, e.g. EKS `g5.xlarge`) when the price
  catalog knows that type, and is otherwise left out of GPU offers (with a note);
- the GPU count is the node's allocatable `nvidia.com/gpu` (a label without a device plugin
  is not a GPU a pod can get);
- nodes that are not Ready, are cordoned, or carry a NoSchedule/NoExecute taint that skyform's
  pods do not tolerate are left out (GPU pods tolerate `nvidia.com/gpu`, CPU pods do not).

Nodes with equal (allocatable CPU, memory, GPU, count, arch, GPU label) form one node type; the
capacity digest covers node types only, so replacing a node by an identical one (autoscaler
churn) does not make a plan stale, while a node type appearing or going away does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from skyform.digests import sha256_hex
from skyform.plan.catalog.offer import format_count

SKYPILOT_LABEL = "skypilot.co/accelerator"
GKE_LABEL = "cloud.google.com/gke-accelerator"
EKS_LABEL = "k8s.amazonaws.com/accelerator"
KARPENTER_LABEL = "karpenter.k8s.aws/instance-gpu-name"
GFD_LABEL = "nvidia.com/gpu.product"
COREWEAVE_LABEL = "gpu.nvidia.com/class"
NEBIUS_LABEL = "nebius.com/gpu-name"
GPU_LABELS = (
    SKYPILOT_LABEL,
    GKE_LABEL,
    EKS_LABEL,
    KARPENTER_LABEL,
    GFD_LABEL,
    COREWEAVE_LABEL,
    NEBIUS_LABEL,
)
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
ARCH_LABELS = ("kubernetes.io/arch", "beta.kubernetes.io/arch")
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB, set by GPU feature discovery
KEPT_LABELS = frozenset((*GPU_LABELS, *INSTANCE_TYPE_LABELS, *ARCH_LABELS, GPU_MEMORY_LABEL))
GPU_RESOURCE = "nvidia.com/gpu"
TOLERATED_BY_GPU_PODS = GPU_RESOURCE  # the pod program tolerates this taint key
ARCH_NAMES = {"amd64": "x86_64", "arm64": "arm64"}

_CPU = re.compile(r"^([0-9.]+)(m?)$")
_MEMORY = re.compile(r"^([0-9.]+(?:[eE][0-9]+)?)([KMGTPE]i?|k|m)?$")
_MEMORY_FACTORS = {
    None: 1,
    "m": 1e-3,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


def parse_cpu(quantity: Any) -> float:
    """`7910m` -> 7.91, `8` -> 8.0; anything unreadable counts as 0 (no pod fits)."""
    match = _CPU.match(str(quantity or "").strip())
    if not match:
        return 0.0
    value = float(match.group(1))
    return round(value / 1000 if match.group(2) else value, 3)


def parse_memory_gib(quantity: Any) -> float:
    """`30312672Ki` -> 28.908, `64Gi` -> 64.0, `16e9` -> 14.901; unreadable -> 0."""
    match = _MEMORY.match(str(quantity or "").strip())
    if not match:
        return 0.0
    return round(float(match.group(1)) * _MEMORY_FACTORS[match.group(2)] / 2**30, 3)


def parse_count(quantity: Any) -> int:
    try:
        return max(0, int(str(quantity or "0").strip()))
    except ValueError:
        return 0


def node_record(item: Mapping[str, Any]) -> dict[str, Any]:
    """The compact, JSON-ready summary of one node object (see the module docstring)."""
    meta = item.get("metadata") or {}
    status = item.get("status") or {}
    spec = item.get("spec") or {}
    allocatable = status.get("allocatable") or {}
    labels = meta.get("labels") or {}
    conditions = status.get("conditions") or []
    taints = spec.get("taints") or []
    return {
        "name": str(meta.get("name") or "?"),
        "cpus": parse_cpu(allocatable.get("cpu")),
        "memory_gib": parse_memory_gib(allocatable.get("memory")),
        "gpus": parse_count(allocatable.get(GPU_RESOURCE)),
        "labels": {str(k): str(v) for k, v in sorted(labels.items()) if k in KEPT_LABELS},
        "ready": any(
            isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
            for c in conditions
        ),
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": sorted(
            {
                str(t.get("key") or "")
                for t in taints
                if isinstance(t, dict) and t.get("effect") in ("NoSchedule", "NoExecute")
            }
        ),
    }


class GpuNaming(NamedTuple):
    """What `node_types` needs from the catalog to name GPUs."""

    canonical: Callable[[str], str | None]  # any spelling -> the catalog's name
    known: Iterable[str]  # GPU names Kubernetes nodes carry (k8s_gpu_labels.csv)
    memory_gib: Callable[[str], float | None]  # per GPU, from the catalog
    instance_gpu: Callable[[str], tuple[str, float] | None]  # cloud instance type -> GPU, count


class NodeType(NamedTuple):
    cpus: float  # allocatable
    memory_gib: float
    accelerator: str | None
    accelerator_count: float
    arch: str
    gpu_memory_gib: float | None
    selector: tuple[str, str] | None  # the node label that names the GPU type
    gpu_taint: bool  # tainted nvidia.com/gpu: only GPU pods go there
    nodes: int

    def describe(self) -> str:
        text = f"{self.cpus:.4g} CPU, {self.memory_gib:.4g} GiB"
        if self.accelerator:
            text += f", {format_count(self.accelerator_count)}× {self.accelerator}"
        return text


def gpu_name(key: str, value: str, naming: GpuNaming) -> str:
    """The catalog's name for the GPU a node label names (kept as written when unknown)."""
    value = value.strip()
    if key == GFD_LABEL:
        return _gfd_name(value, naming)
    found = naming.canonical(value)
    if found:
        return found
    if key in (GKE_LABEL, EKS_LABEL):
        bare = re.sub(r"^nvidia-(tesla-)?", "", value, flags=re.IGNORECASE)
        return naming.canonical(bare) or bare.upper()
    return value.upper()


def _gfd_name(value: str, naming: GpuNaming) -> str:
    """GPU feature discovery values (`NVIDIA-A100-SXM4-80GB`, `Tesla-V100-SXM2-32GB`)."""
    upper = value.upper()
    for pattern, name in ((r"A100.*80GB", "A100-80GB"), (r"V100.*32GB", "V100-32GB")):
        if re.search(pattern, upper):
            return naming.canonical(name) or name
    for name in sorted(naming.known, key=lambda n: (-len(n), n)):
        if re.search(rf"(?<![A-Z0-9]){re.escape(name.upper())}(?![A-Z0-9])", upper):
            return name
    cleaned = upper.replace("NVIDIA-", "").replace("GEFORCE-", "").replace("RTX-", "RTX")
    return naming.canonical(cleaned) or cleaned


def _first_label(labels: Mapping[str, str], keys: Iterable[str]) -> tuple[str, str] | None:
    for key in keys:
        value = labels.get(key, "").strip()
        if value:
            return key, value
    return None


def _gpu_of(node: Mapping[str, Any], naming: GpuNaming):
    """(accelerator, selector, GPU memory) of a node with GPUs, or None when unnamed."""
    labels = node.get("labels") or {}
    selector = _first_label(labels, GPU_LABELS)
    if selector is not None:
        name = gpu_name(*selector, naming)
    else:
        selector = _first_label(labels, INSTANCE_TYPE_LABELS)
        found = naming.instance_gpu(selector[1]) if selector else None
        if found is None:
            return None
        name = found[0]
    memory = naming.memory_gib(name)
    mib = parse_count(labels.get(GPU_MEMORY_LABEL))
    if mib:
        memory = round(mib / 1024.0, 3)
    return name, selector, memory


def exclusion(node: Mapping[str, Any]) -> str | None:
    """Why no skyform pod can be scheduled on this node, if so."""
    if not node.get("ready"):
        return "not Ready"
    if node.get("unschedulable"):
        return "cordoned"
    blocking = [t for t in node.get("taints") or [] if t != TOLERATED_BY_GPU_PODS]
    if blocking:
        return f"tainted {blocking[0]}"
    return None


def node_types(
    records: Iterable[Mapping[str, Any]], naming: GpuNaming
) -> tuple[tuple[NodeType, ...], dict[str, int], list[str]]:
    """(node types, {why left out: nodes}, notes) of one context's node records."""
    groups: dict[NodeType, int] = {}  # node type (nodes=0) -> how many nodes
    left_out: dict[str, int] = {}
    notes: list[str] = []
    for node in records:
        why = exclusion(node)
        if why is not None:
            left_out[why] = left_out.get(why, 0) + 1
            continue
        gpus = int(node.get("gpus") or 0)
        acc = selector = gpu_memory = None
        if gpus:
            named = _gpu_of(node, naming)
            if named is None:
                notes.append(
                    f"node {node.get('name')} has {gpus} {GPU_RESOURCE} but no GPU type label: "
                    f"label it {SKYPILOT_LABEL}=<gpu> or install the NVIDIA GPU operator"
                )
                gpus = 0
            else:
                acc, selector, gpu_memory = named
        labels = node.get("labels") or {}
        arch_label = _first_label(labels, ARCH_LABELS)
        arch = ARCH_NAMES.get(arch_label[1], arch_label[1]) if arch_label else "x86_64"
        key = NodeType(
            cpus=float(node.get("cpus") or 0.0),
            memory_gib=float(node.get("memory_gib") or 0.0),
            accelerator=acc,
            accelerator_count=float(gpus),
            arch=arch,
            gpu_memory_gib=gpu_memory,
            selector=selector,
            gpu_taint=TOLERATED_BY_GPU_PODS in (node.get("taints") or []),
            nodes=0,
        )
        groups[key] = groups.get(key, 0) + 1
    types = tuple(key._replace(nodes=n) for key, n in groups.items())
    return tuple(sorted(types, key=_type_order)), dict(sorted(left_out.items())), sorted(notes)


def _type_order(t: NodeType) -> tuple:
    return (t.accelerator or "", -t.accelerator_count, -t.cpus, -t.memory_gib, t.arch, t.selector)


def capacity_digest(types: Iterable[NodeType]) -> str:
    """sha256 over the node types (plain values: repr is canonical)."""
    payload = repr(sorted(tuple(t) for t in types))
    return sha256_hex(payload)


def describe_types(types: tuple[NodeType, ...], left_out: Mapping[str, int]) -> str:
    """`3 nodes: 2× (96 CPU, 1100 GiB, 8× A100), 1× (16 CPU, 60 GiB); 1 not Ready`."""
    total = sum(t.nodes for t in types)
    text = f"{total} node{'s' if total != 1 else ''}"
    if types:
        text += ": " + ", ".join(f"{t.nodes}× ({t.describe()})" for t in types)
    if left_out:
        text += "; left out: " + ", ".join(f"{n} {why}" for why, n in left_out.items())
    return text


class Fit(NamedTuple):
    """Where a pod of one size can go in a context."""

    pods: int  # how many such pods the fitting nodes hold at most (allocatable, not free)
    arch: str
    gpu_memory_gib: float | None
    selector: tuple[str, tuple[str, ...]] | None  # label key, accepted values (GPU pods)


def _pods_on(t: NodeType, cpus: float, memory: float, count: float) -> int:
    per = [math.floor(t.cpus / cpus + 1e-9) if cpus else 1 << 30]
    per.append(math.floor(t.memory_gib / memory + 1e-9) if memory else 1 << 30)
    if count:
        per.append(math.floor(t.accelerator_count / count + 1e-9))
    return max(0, min(per)) * t.nodes


def _pods(types: Iterable[NodeType], cpus: float, memory: float, count: float) -> int:
    return sum(_pods_on(t, cpus, memory, count) for t in types)


def fit(
    types: tuple[NodeType, ...], cpus: float, memory: float, accelerator: str | None, count: float
) -> Fit | str:
    """Where a pod of (cpus, memory GiB, count × accelerator) fits; else why not, in words."""
    if accelerator:
        kind = [t for t in types if t.accelerator == accelerator]
        if not kind:
            have = sorted(
                {
                    f"{t.accelerator}:{format_count(t.accelerator_count)}"
                    for t in types
                    if t.accelerator
                }
            )
            return f"no node has {accelerator}" + (f" (GPUs: {', '.join(have)})" if have else "")
        enough = [t for t in kind if t.accelerator_count >= count]
        if not enough:
            most = max(t.accelerator_count for t in kind)
            return (
                f"no node has {format_count(count)}× {accelerator} "
                f"(at most {format_count(most)} per node)"
            )
        candidates, what = enough, f"{accelerator} nodes"
    else:
        candidates, what = [t for t in types if not t.gpu_taint], "nodes"
        if not candidates:
            return "no node takes CPU-only pods (every node is a tainted GPU node)"
    fitting = [t for t in candidates if _pods_on(t, cpus, memory, count) > 0]
    if not fitting:
        top = max(candidates, key=lambda t: (t.cpus, t.memory_gib))
        return (
            f"no node fits the pod ({format_count(cpus)} CPU, {format_count(memory)} GiB): "
            f"the largest {what} allocate {top.cpus:.4g} CPU, {top.memory_gib:.4g} GiB"
        )
    archs = {t.arch for t in fitting}
    arch = "x86_64" if "x86_64" in archs else sorted(archs)[0]
    fitting = [t for t in fitting if t.arch == arch]
    selector = None
    if accelerator:
        by_key: dict[str, list[NodeType]] = {}
        for t in fitting:
            if t.selector:
                by_key.setdefault(t.selector[0], []).append(t)
        if by_key:  # every named GPU node type has one
            key = max(sorted(by_key), key=lambda k: _pods(by_key[k], cpus, memory, count))
            fitting = by_key[key]
            selector = (key, tuple(sorted({t.selector[1] for t in fitting if t.selector})))
    pods = _pods(fitting, cpus, memory, count)
    memories = [t.gpu_memory_gib for t in fitting if t.gpu_memory_gib and accelerator]
    return Fit(pods, arch, min(memories) if memories else None, selector)
