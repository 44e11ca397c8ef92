"""Cluster specs and input contexts for the Pulumi engine's tests."""

from __future__ import annotations

from functools import cache

from skyform.config import Config
from skyform.plan.catalog import BUNDLED_DIR, Catalog, load_catalog
from skyform.plan.jobdigest import with_digests
from skyform.plan.model import (
    Action,
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
from skyform.stacks.pulumi.cloud import InputContext

PUBLIC_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB4R1Je6kzkFXxOW/4K5M+eta0NvX7pteNb3Hk01rQUM skyform"
)
PLAN_DIGEST = "sha256:" + "ab" * 32

AWS_G5 = PlacedOffer(
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
AWS_M5 = PlacedOffer(
    cloud="aws",
    region="us-west-2",
    zone="usw2-az1",
    instance_type="m5.2xlarge",
    spot=True,
    hourly_price=0.15,
    vcpus=8,
    memory_gib=32,
)
AWS_GRAVITON = PlacedOffer(
    cloud="aws",
    region="us-east-1",
    zone="use1-az1",
    instance_type="m7g.xlarge",
    spot=False,
    hourly_price=0.16,
    vcpus=4,
    memory_gib=16,
    arch="arm64",
)
GCP_N1_V100 = PlacedOffer(
    cloud="gcp",
    region="us-central1",
    zone="us-central1-a",
    instance_type="n1-standard-8",
    spot=True,
    hourly_price=1.2,
    accelerator="V100",
    accelerator_count=2,
    vcpus=8,
    memory_gib=30,
)
GCP_A2 = PlacedOffer(
    cloud="gcp",
    region="us-central1",
    zone="us-central1-c",
    instance_type="a2-highgpu-1g",
    spot=False,
    hourly_price=3.67,
    accelerator="A100",
    accelerator_count=1,
    vcpus=12,
    memory_gib=85,
)
GCP_N2 = PlacedOffer(
    cloud="gcp",
    region="europe-west4",
    zone="europe-west4-b",
    instance_type="n2-standard-8",
    spot=False,
    hourly_price=0.38,
    vcpus=8,
    memory_gib=32,
)
K8S_T4_GKE = PlacedOffer(
    cloud="kubernetes",
    region="gke_proj_us-central1-a_train",
    zone=None,
    instance_type="4CPU--16GB--1xT4",
    spot=False,
    hourly_price=0.0,
    accelerator="T4",
    accelerator_count=1,
    vcpus=4,
    memory_gib=16,
    context="gke_proj_us-central1-a_train",
)
K8S_H100 = PlacedOffer(
    cloud="kubernetes",
    region="lab",
    zone=None,
    instance_type="8CPU--64GB--2xH100",
    spot=False,
    hourly_price=0.0,
    accelerator="H100",
    accelerator_count=2,
    vcpus=8,
    memory_gib=64,
    context="lab",
)
K8S_CPU = PlacedOffer(
    cloud="kubernetes",
    region="default",
    zone=None,
    instance_type="0.5CPU--1.5GB",
    spot=False,
    hourly_price=0.0,
    vcpus=0.5,
    memory_gib=1.5,
)


def spec(offer: PlacedOffer, name: str = "c1", nodes: int = 1, **kw) -> ClusterSpec:
    return ClusterSpec(name=name, offer=offer, num_nodes=nodes, **kw)


@cache
def catalog() -> Catalog:
    return load_catalog(Config(), source=BUNDLED_DIR)


def context(**kw) -> InputContext:
    kw.setdefault("plan_digest", PLAN_DIGEST)
    kw.setdefault("gcp_project", "my-project")
    return InputContext(
        ssh_public_key=PUBLIC_KEY,
        ssh_key_id="7f8fc1957094",
        image_lookup=catalog().image_for,
        k8s_gpus=catalog().k8s_gpus,
        **kw,
    )


LOCAL = PlacedOffer(cloud="local", region="local", zone=None, instance_type="local", spot=False,
                    hourly_price=0.0)  # fmt: skip


def plan_of(*specs: ClusterSpec) -> Plan:
    """A plan that creates these clusters (enough for export and show), consistent as the
    plan loader requires: one task per cluster, running `echo` on it."""
    jobs = [with_digests(JobSpec(name=s.name, run="echo", num_nodes=s.num_nodes)) for s in specs]
    after = [
        s.model_copy(update={"setup_digest": j.setup_digest, "job_digest": j.job_digest})
        for s, j in zip(specs, jobs, strict=True)
    ]
    return Plan(
        skyform_version="0.1.0",
        objective="cost",
        task=TaskSource(path="task.yaml", file_digest="sha256:" + "1" * 64,
                        digest="sha256:" + "2" * 64),
        catalog_digest="sha256:" + "3" * 64,
        onprem_digest="sha256:" + "4" * 64,
        prior=Prior(),
        tasks=[
            TaskPlacement(task=s.name, index=i, cluster=s.name, num_nodes=s.num_nodes,
                          request="", offer=s.offer, hourly_cost=s.hourly_cost,
                          estimated_hours=0.0, estimated_cost=0.0, job=j)
            for i, (s, j) in enumerate(zip(after, jobs, strict=True))
        ],
        changes=[
            ClusterChange(cluster=s.name, action=Action.CREATE, reason="new cluster", after=s)
            for s in after
        ],
        summary=Summary(add=len(specs), change=0, destroy=0, hourly_before=0.0,
                        hourly_after=sum(s.hourly_cost for s in specs), estimated_cost=0.0,
                        estimated_hours=0.0),
    )  # fmt: skip
