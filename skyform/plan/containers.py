"""`image_id: docker:IMAGE`: the task runs inside that container on each node, as SkyPilot
runs it (setup and run through `docker exec`, the workdir and mounts mapped in).

Where a container can run is decided here, at plan time: AWS and GCP nodes get a runtime
from their init (docker, installed when the machine image lacks it); an ssh pool's hosts
need docker or podman already, as `skyform check` found them; `local` runs no container
(skyform does not start one on the machine it runs on). Kubernetes runs the image as the
pod itself, so nothing here applies to it.
"""

from __future__ import annotations

from collections.abc import Mapping

from skyform.errors import PlanError

PREFIX = "docker:"
NATIVE = ("kubernetes",)  # the cluster's nodes are the containers themselves


def container_image(image_id: str | None, cloud: str) -> str | None:
    """The container image a cluster's jobs run in, or None (no container, or Kubernetes,
    where the image is the pod's)."""
    if not image_id or not image_id.startswith(PREFIX) or cloud in NATIVE:
        return None
    return image_id.removeprefix(PREFIX)


def check_container_placement(
    cluster: str,
    image: str,
    cloud: str,
    pool: str | None,
    runtimes: Mapping[str, str | None],
) -> None:
    """Refuse a placement where the container cannot run. `runtimes`: the ssh offer's hosts
    -> the runtime `check` found there ("" none, None never probed)."""
    if not image or image.startswith("-") or any(c.isspace() or not c.isprintable() for c in image):
        raise PlanError(
            f"cluster {cluster}: `image_id: docker:{image}` is not an image name",
            "Write a registry's image reference, e.g. `image_id: docker:ubuntu:22.04`.",
        )
    if cloud == "local":
        raise PlanError(
            f"cluster {cluster}: `image_id: docker:{image}` asks for a container, and skyform "
            "runs no container on the local machine",
            "Run the image on `infra: aws`, `gcp`, `kubernetes` or an ssh pool whose hosts have "
            "docker or podman, or drop `image_id` to run on this machine directly.",
        )
    if cloud != "ssh":
        return
    found = {host: rt for host, rt in runtimes.items() if rt}
    if runtimes and len(found) == len(runtimes):
        return
    unknown = sorted(h for h, rt in runtimes.items() if rt is None)
    without = sorted(h for h, rt in runtimes.items() if rt == "")
    parts = []
    if without:
        parts.append(f"no docker or podman answers on {', '.join(without)}")
    if unknown:
        parts.append(f"`skyform check` has not probed {', '.join(unknown)} for one")
    raise PlanError(
        f"cluster {cluster}: `image_id: docker:{image}` needs a container runtime on every host "
        f"of ssh pool {pool or '?'}, and " + "; ".join(parts or ["the pool has no hosts"]),
        "Install docker or podman on those hosts (usable by the pool's user, directly or "
        "through passwordless sudo), run `skyform check`, then plan again.",
    )
