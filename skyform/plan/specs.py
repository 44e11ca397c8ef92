"""A task's recorded parts: the JobSpec (what runs: its text, envs, mounts, with secret values
replaced by their `${NAME}` placeholders) and the ClusterSpec (what is made: the placed offer
and the cluster's attributes). Pure functions of the task and its placement.
"""

from __future__ import annotations

from collections.abc import Mapping

from skyform.plan.autostop import check_stoppable, setting_for
from skyform.plan.buckets import bucket_mount
from skyform.plan.jobdigest import canonical, with_digests
from skyform.plan.model import ClusterSpec, JobSpec, PlacedOffer, PlannedMount
from skyform.spec import ResourceRequest, TaskSpec
from skyform.spec.models import SkyformExt


def _scrub(text: str, secrets: Mapping[str, str]) -> str:
    """Replace secret values substituted into a recorded field by `${NAME}` placeholders."""
    for name, value in sorted(secrets.items(), key=lambda kv: -len(kv[1])):
        if value:
            text = text.replace(value, "${" + name + "}")
    return text


def job_spec(task: TaskSpec, label: str, offer: PlacedOffer | None = None) -> JobSpec:
    secrets = task.secret_values()
    workdir = (
        task.workdir
        if isinstance(task.workdir, str) or task.workdir is None
        else (canonical(task.workdir.model_dump(mode="json")))
    )
    mounts = {}
    for dst, mount in sorted(task.file_mounts.items()):
        source = (
            mount.source
            if isinstance(mount.source, str)
            else canonical(mount.model_dump(mode="json", exclude_defaults=True))
        )
        bucket = (
            bucket_mount(mount.bucket, offer)
            if mount.bucket is not None and offer is not None
            else None
        )
        mounts[_scrub(dst, secrets)] = PlannedMount(
            source=_scrub(source, secrets), mode=mount.mode, bucket=bucket
        )
    workdir = _scrub(workdir, secrets) if workdir else None
    return with_digests(
        JobSpec(
            name=label,
            workdir=workdir,
            setup=task.setup,
            run=task.run,
            envs=dict(task.envs),
            secrets=task.secret_names(),
            file_mounts=mounts,
            num_nodes=task.num_nodes,
            checkpoint_dir=task.skyform.checkpoint_dir,
        )
    )


def placed(offer) -> PlacedOffer:
    return PlacedOffer.model_validate(offer.to_dict())


def _image(request: ResourceRequest, region: str) -> str | None:
    image = request.image_id
    if isinstance(image, dict):
        return image.get(region)
    return image


def cluster_spec(
    name: str,
    request: ResourceRequest,
    offer: PlacedOffer,
    nodes: int,
    job: JobSpec,
    ext: SkyformExt | None = None,
    shown_as: str | None = None,
) -> ClusterSpec:
    autostop = setting_for(request.autostop, ext or SkyformExt())
    check_stoppable(name, autostop, offer)
    return ClusterSpec(
        autostop=autostop,
        name=name,
        shown_as=shown_as,
        offer=offer,
        num_nodes=nodes,
        disk_size=request.disk_size,
        disk_tier=request.disk_tier,
        network_tier=request.network_tier,
        ports=list(request.ports),
        image_id=_image(request, offer.region),
        labels=dict(request.labels),
        setup_digest=job.setup_digest,
        job_digest=job.job_digest,
    )
