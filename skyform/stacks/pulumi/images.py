"""Which image a node boots: the task's `image_id`, or the catalog's default for the offer.

Defaults follow SkyPilot's image tags (catalog `images.csv`):
- AWS: `skypilot:custom-gpu-ubuntu` with an NVIDIA GPU, else `custom-cpu-ubuntu`; `-arm64`
  variants for arm instances (Graviton, g5g's T4g); per region.
- GCP: `custom-gpu-ubuntu-2204-cuda13` for Turing and newer GPUs, `custom-gpu-ubuntu-2204`
  (CUDA 12, proprietary driver) for pre-Turing ones the open kernel module does not drive,
  `custom-cpu-ubuntu-2204` (or `-arm64`) without a GPU; global images.
- Kubernetes: `custom-gpu-ubuntu-2204` / `custom-cpu-ubuntu-2204` container images.
`image_id` may be `skypilot:<tag>` (looked up the same way), `docker:<image>` (on Kubernetes
the pod's image; on a VM the container the task runs in, on the default machine image,
whose init provides a runtime: inputs.container_init), or a cloud image id used as is.
A `{region: image}` mapping is resolved by the planner.
"""

from __future__ import annotations

from skyform.errors import StackError
from skyform.spec.accelerators import has_nvidia_gpu
from skyform.stacks.pulumi.cloud import ImageLookup, pulumi_cloud

PRE_TURING_GPUS = frozenset({"K80", "M60", "P4", "P100", "V100", "V100-32GB"})
IMAGE_HINT = "Set `resources.image_id` in the task file (an image id, or skypilot:<tag>)."


def default_tags(cloud: str, accelerator: str | None, arch: str) -> list[str]:
    """Image tags to try, best first (the cloud folder's `default_images`)."""
    arm = arch in ("arm64", "aarch64")
    return pulumi_cloud(cloud).default_images(has_nvidia_gpu(accelerator), arm, accelerator)


def resolve_image(
    cloud: str,
    region: str | None,
    image_id: str | None,
    *,
    accelerator: str | None,
    arch: str,
    lookup: ImageLookup,
) -> str:
    if image_id and image_id.startswith("docker:") and not pulumi_cloud(cloud).container_images:
        image_id = None  # a container on the VM: the machine boots the default image
    if image_id:
        if image_id.startswith("skypilot:"):
            regional = pulumi_cloud(cloud).regional_images
            found = lookup(cloud, region, image_id)
            if found is None:
                raise StackError(
                    f"image {image_id} has no {cloud} image"
                    + (f" in {region}" if region and regional else "")
                    + " in the catalog",
                    IMAGE_HINT,
                )
            return found
        if pulumi_cloud(cloud).container_images and image_id.startswith("docker:"):
            return image_id.removeprefix("docker:")
        return image_id
    tags = default_tags(cloud, accelerator, arch)
    for tag in tags:
        found = lookup(cloud, region, tag)
        if found is not None:
            return found
    where = f"{cloud} region {region}" if pulumi_cloud(cloud).regional_images else cloud
    raise StackError(
        f"the catalog has no default image (skypilot:{tags[-1]}) for {where}", IMAGE_HINT
    )
