"""Hand-built plans and cluster specs for renderer, diff and planfile tests."""

from __future__ import annotations

from skyform.plan.jobdigest import with_digests
from skyform.plan.model import (
    Action,
    Alternative,
    ClusterChange,
    ClusterSpec,
    JobSpec,
    PlacedOffer,
    Plan,
    Prior,
    Summary,
    TaskPlacement,
    TaskSource,
)

P4D_SPOT = PlacedOffer(
    cloud="aws",
    region="us-east-1",
    zone="use1-az1",
    instance_type="p4d.24xlarge",
    spot=True,
    hourly_price=2.4655,
    accelerator="A100",
    accelerator_count=8,
    vcpus=96,
    memory_gib=1152,
)
A2_SPOT = PlacedOffer(
    cloud="gcp",
    region="us-central1",
    zone="us-central1-a",
    instance_type="a2-highgpu-8g",
    spot=True,
    hourly_price=14.4308,
    accelerator="A100",
    accelerator_count=8,
    vcpus=96,
    memory_gib=680,
)
G5 = PlacedOffer(
    cloud="aws",
    region="us-east-1",
    zone="use1-az4",
    instance_type="g5.xlarge",
    spot=False,
    hourly_price=1.006,
    accelerator="A10G",
    accelerator_count=1,
    vcpus=4,
    memory_gib=16,
)


def job(name: str = "train", run: str = "python train.py", setup: str = "pip install -r r.txt"):
    return with_digests(JobSpec(name=name, run=run, setup=setup, workdir=".", envs={"EPOCHS": "3"}))


def spec(name: str = "train", offer: PlacedOffer = P4D_SPOT, nodes: int = 1, **kw) -> ClusterSpec:
    kw.setdefault("setup_digest", job(name).setup_digest)
    kw.setdefault("job_digest", job(name).job_digest)
    return ClusterSpec(name=name, offer=offer, num_nodes=nodes, **kw)


def placement(
    name: str = "train",
    offer: PlacedOffer = P4D_SPOT,
    nodes: int = 1,
    hours=1.0,
    alternatives: list[Alternative] | None = None,
    index: int = 0,
    start: float = 0.0,
) -> TaskPlacement:
    hourly = offer.hourly_price * nodes
    if alternatives is None:
        alternatives = [
            Alternative(
                offer=offer,
                hourly_cost=hourly,
                estimated_cost=hourly * hours,
                estimated_hours=hours,
                chosen=True,
            ),
            Alternative(
                offer=A2_SPOT,
                hourly_cost=A2_SPOT.hourly_price * nodes,
                estimated_cost=A2_SPOT.hourly_price * nodes * hours,
                estimated_hours=hours,
            ),
        ]
    return TaskPlacement(
        task=name,
        index=index,
        cluster=name,
        num_nodes=nodes,
        request="A100:8, spot",
        offer=offer,
        hourly_cost=hourly,
        estimated_hours=hours,
        estimated_cost=hourly * hours,
        start_hours=start,
        finish_hours=start + hours,
        alternatives=alternatives,
        job=job(name),
    )


def plan(
    changes: list[ClusterChange],
    tasks: list[TaskPlacement],
    *,
    add=0,
    change=0,
    destroy=0,
    before=0.0,
    destroy_plan=False,
) -> Plan:
    after = sum(t.hourly_cost for t in tasks)
    return Plan(
        skyform_version="0.1.0",
        objective="cost",
        destroy=destroy_plan,
        task=TaskSource(
            path="train.yaml",
            name="train",
            file_digest="sha256:" + "1" * 64,
            digest="sha256:" + "2" * 64,
        ),
        catalog_digest="sha256:" + "3" * 64,
        onprem_digest="sha256:" + "4" * 64,
        prior=Prior(lineage="lin-1", serial=3),
        tasks=tasks,
        changes=changes,
        summary=Summary(
            add=add,
            change=change,
            destroy=destroy,
            hourly_before=before,
            hourly_after=after,
            estimated_cost=sum(t.estimated_cost for t in tasks),
            estimated_hours=max((t.finish_hours for t in tasks), default=0.0),
        ),
    )


def create_plan() -> Plan:
    p = placement()
    return plan(
        [ClusterChange(cluster="train", action=Action.CREATE, reason="new cluster", after=spec())],
        [p],
        add=1,
    )
