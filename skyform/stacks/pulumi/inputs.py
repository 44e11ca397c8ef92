"""A cluster's placement -> the plain dict its Pulumi program registers resources from.

This is where skyform's knowledge goes (catalog images, disk tiers, GPU names, label rules);
each cloud's `<cloud>/program.py` only turn the dict into resources. The dict is JSON-able and is
also what an exported project keeps in `Pulumi.<stack>.yaml` (`<project>:cluster`), so the
inline and the exported program see exactly the same inputs.
"""

from __future__ import annotations

import shlex
from typing import Any

from skyform.errors import StackError
from skyform.infra import OBJECT_STORES
from skyform.plan.containers import container_image
from skyform.plan.model import Action, ClusterSpec, PlannedBucket
from skyform.spec.accelerators import has_nvidia_gpu
from skyform.stacks.pulumi import naming
from skyform.stacks.pulumi.cloud import InputContext, pulumi_cloud
from skyform.stacks.pulumi.images import resolve_image


def program_inputs(spec: ClusterSpec, ctx: InputContext) -> dict:
    """The input dict; optional entries are left out rather than null (programs use .get)."""
    return without_nulls(pulumi_cloud(spec.offer.cloud).inputs(spec, ctx))


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
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


def cloud_labels(spec: ClusterSpec, ctx: InputContext, cloud: str, key_fn, value_fn, sep: str):
    """The task's labels made valid for the cloud, plus skyform's own (cluster, plan)."""
    labels = naming.sanitized_labels(spec.labels, key_fn, value_fn, cloud)
    labels[f"skyform{sep}cluster"] = value_fn(spec.name)
    plan = naming.plan_label(ctx.plan_digest)
    if plan:
        labels[f"skyform{sep}plan"] = plan
    return labels


def node_image(spec: ClusterSpec, ctx: InputContext) -> str:
    offer = spec.offer
    region = offer.region if pulumi_cloud(offer.cloud).regional_images else None
    return resolve_image(
        offer.cloud,
        region,
        spec.image_id,
        accelerator=offer.accelerator,
        arch=offer.arch,
        lookup=ctx.image_lookup,
    )


# A VM's first-boot script (root) when its task runs in a container (exec/container.py
# starts that container over SSH before setup): a docker runtime — SkyPilot's default images
# have one, a plain Ubuntu image gets Ubuntu's docker.io —, the login user in its group,
# and the image pulled ahead of the first job. A private image is pulled at that job,
# after the registry login (whose password never reaches a node's init or a stack's inputs).
CONTAINER_INIT = """#!/bin/bash
# skyform: a container runtime for the task's `image_id: docker:...` (pulled below)
set -u
install() {{
  for attempt in 1 2 3 4 5; do  # the image's own first-boot updates may hold apt's lock
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" && return
    sleep 15
  done
}}
command -v docker >/dev/null 2>&1 || install docker.io
{gpus}systemctl enable --now docker
usermod -aG docker {user}
docker pull {quoted_image} || true
"""
# With NVIDIA GPUs, docker's `--gpus all` (exec/container.py) needs NVIDIA's container
# toolkit: SkyPilot's GPU images have it; elsewhere it comes from NVIDIA's apt repository.
GPU_INIT = """if ! command -v nvidia-ctk >/dev/null 2>&1; then
  repo=https://nvidia.github.io/libnvidia-container
  keyring=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg
  curl -fsSL "$repo/gpgkey" | gpg --batch --yes --dearmor -o "$keyring"
  curl -fsSL "$repo/stable/deb/nvidia-container-toolkit.list" \\
    | sed "s#deb https://#deb [signed-by=$keyring] https://#" \\
    | tee /etc/apt/sources.list.d/nvidia-container-toolkit.list >/dev/null
  install nvidia-container-toolkit
fi
nvidia-ctk runtime configure --runtime=docker && systemctl restart docker
"""


def container_init(spec: ClusterSpec, ssh_user: str) -> str | None:
    """The node's init script when its jobs run in a container, else None."""
    image = container_image(spec.image_id, spec.offer.cloud)
    if image is None:
        return None
    gpus = GPU_INIT if has_nvidia_gpu(spec.offer.accelerator) else ""
    return CONTAINER_INIT.format(
        user=shlex.quote(ssh_user), quoted_image=shlex.quote(image), gpus=gpus
    )


def cluster_buckets(spec: ClusterSpec, ctx: InputContext) -> list[PlannedBucket]:
    """The buckets the cluster's stack owns: created by this plan for this cluster, in its
    cloud's store and region, and `persistent: false` (so they go when the stack goes). A
    persistent bucket gets a storage stack of its own (`storage_inputs`)."""
    store = OBJECT_STORES.get(spec.offer.cloud)
    return [
        b
        for b in ctx.buckets
        if b.action is Action.CREATE
        and not b.persistent
        and b.store == store
        and b.region == spec.offer.region
        and spec.name in b.used_by
    ]


def storage_inputs(bucket: PlannedBucket, ctx: InputContext, *, keep: bool = True) -> dict:
    """The input dict of a bucket's storage stack (the store's cloud's `register_storage`).
    `keep`: protected and never emptied by Pulumi (a persistent bucket); False for a shared
    `persistent: false` bucket, and for the last update before `storage delete` destroys it."""
    cloud = {v: k for k, v in OBJECT_STORES.items()}.get(bucket.store)
    build = pulumi_cloud(cloud).storage_inputs if cloud else None
    if build is None or bucket.region is None:
        raise StackError(f"bucket {bucket.uri} has no Pulumi storage program (store, region)")
    return {**build(bucket, ctx), "keep": keep}
