"""ClusterSpec -> program inputs: names, labels, disks, images and ports the clouds accept."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pulumi_specs import (
    AWS_G5,
    AWS_GRAVITON,
    AWS_M5,
    GCP_A2,
    GCP_N1_V100,
    GCP_N2,
    K8S_CPU,
    K8S_H100,
    K8S_T4_GKE,
    PLAN_DIGEST,
    PUBLIC_KEY,
    catalog,
    context,
    spec,
)

from skyform.errors import StackError
from skyform.plan.model import PlacedOffer
from skyform.stacks.pulumi import disks, naming
from skyform.stacks.pulumi.images import resolve_image
from skyform.stacks.pulumi.inputs import port_ranges, program_inputs

GCP_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
GCP_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
GCP_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
K8S_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


# --- labels and names -------------------------------------------------------------------------


@given(st.text(max_size=200))
def test_any_text_becomes_a_valid_gcp_label(text):
    assert GCP_LABEL_KEY.match(naming.gcp_label_key(text))
    assert GCP_LABEL_VALUE.match(naming.gcp_label_value(text))


@given(st.text(max_size=200))
def test_any_text_becomes_a_valid_kubernetes_label_value(text):
    assert K8S_VALUE.match(naming.k8s_label_value(text))


@given(st.text(min_size=1, max_size=120), st.integers(0, 999))
def test_any_cluster_name_gives_valid_gcp_and_pod_names(name, rank):
    assert GCP_NAME.match(naming.gcp_name(name, str(rank)))
    assert DNS_LABEL.match(naming.dns_name(name, str(rank)))


def test_names_stay_readable_and_distinct():
    assert naming.gcp_name("train", "0") == "train-0"
    assert naming.dns_name("train", "ssh") == "train-ssh"
    # Rewritten or shortened names carry a hash of the original, so they cannot collide.
    assert naming.dns_name("Train_Job", "0") != naming.dns_name("train-job", "0")
    long_a, long_b = naming.gcp_name("a" * 80, "0"), naming.gcp_name("a" * 80, "1")
    assert len(long_a) <= 63 and long_a != long_b


def test_gcp_labels_are_lowercased_and_collisions_refused():
    labels = naming.sanitized_labels(
        {"Team": "ML Ops", "2fast": "x" * 80}, naming.gcp_label_key, naming.gcp_label_value, "GCP"
    )
    assert labels == {"team": "ml_ops", "l2fast": "x" * 63}
    with pytest.raises(StackError, match="'Team' and 'team' both become 'team'"):
        naming.sanitized_labels(
            {"Team": "a", "team": "b"}, naming.gcp_label_key, naming.gcp_label_value, "GCP"
        )


def test_aws_refuses_the_reserved_tag_prefix():
    with pytest.raises(StackError, match="'aws:' tag prefix is reserved"):
        naming.aws_tags({"aws:owner": "me"})


def test_plan_digest_label_fits_every_cloud():
    value = naming.plan_label(PLAN_DIGEST)
    assert value.startswith("sha256_abab") and len(value) == 63
    assert GCP_LABEL_VALUE.match(value) and K8S_VALUE.match(value)


# --- disks --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tier", "size", "expected"),
    [
        (None, 256, {"size_gb": 256, "type": "gp3", "iops": 3500, "throughput": 218}),
        ("low", 256, {"size_gb": 256, "type": "standard", "iops": None, "throughput": None}),
        ("medium", 256, {"size_gb": 256, "type": "gp3", "iops": 3500, "throughput": 218}),
        ("high", 256, {"size_gb": 256, "type": "gp3", "iops": 7000, "throughput": 437}),
        ("ultra", 256, {"size_gb": 256, "type": "io2", "iops": 20000, "throughput": None}),
        ("best", 256, {"size_gb": 256, "type": "io2", "iops": 20000, "throughput": None}),
        # IOPS bounded by the size (500 per GiB), gp3 never below its 3,000 baseline
        ("high", 10, {"size_gb": 10, "type": "gp3", "iops": 5000, "throughput": 312}),
        ("medium", 4, {"size_gb": 4, "type": "gp3", "iops": 3000, "throughput": 187}),
        ("ultra", 16, {"size_gb": 16, "type": "io2", "iops": 8000, "throughput": None}),
    ],
)
def test_aws_disk_tiers(tier, size, expected):
    assert disks.aws_root_volume(size, tier) == expected


@pytest.mark.parametrize(
    ("machine", "vcpus", "tier", "expected"),
    [
        ("n2-standard-8", 8, None, "pd-balanced"),
        ("n2-standard-8", 8, "low", "pd-standard"),
        ("n2-standard-8", 8, "high", "pd-ssd"),
        ("n2-standard-8", 8, "ultra", "pd-ssd"),  # pd-extreme needs 64+ vCPUs on n2
        ("n2-standard-64", 64, "ultra", "pd-extreme"),
        ("m3-ultramem-32", 32, "best", "pd-extreme"),
        ("n1-standard-8", 8, "ultra", "pd-ssd"),
        ("a2-highgpu-1g", 12, "ultra", "pd-ssd"),
        ("a3-highgpu-8g", 208, "low", "pd-balanced"),
        ("a3-highgpu-8g", 208, "ultra", "hyperdisk-balanced"),
        ("g2-standard-8", 8, "low", "pd-balanced"),
        ("c3-standard-8", 8, "low", "pd-balanced"),
        ("c4-standard-8", 8, "low", "hyperdisk-balanced"),
        ("n4-standard-8", 8, "medium", "hyperdisk-balanced"),
        ("a3-ultragpu-8g", 224, "high", "hyperdisk-balanced"),
        ("e2-standard-4", 4, "ultra", "pd-ssd"),
    ],
)
def test_gcp_disk_types_follow_machine_families(machine, vcpus, tier, expected):
    disk = disks.gcp_boot_disk(machine, vcpus, 100, tier)
    assert disk["type"] == expected
    assert disk["iops"] == (20000 if expected == "pd-extreme" else None)


def test_unknown_disk_tier_is_refused():
    with pytest.raises(StackError, match="disk_tier 'fast' is not one of"):
        disks.aws_root_volume(100, "fast")


# --- images -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offer", "tag"),
    [
        (AWS_G5, "skypilot:custom-gpu-ubuntu"),
        (AWS_M5, "skypilot:custom-cpu-ubuntu"),
        (AWS_GRAVITON, "skypilot:custom-cpu-ubuntu-arm64"),
        (GCP_N1_V100, "skypilot:custom-gpu-ubuntu-2204"),  # pre-Turing: the CUDA 12 image
        (GCP_A2, "skypilot:custom-gpu-ubuntu-2204-cuda13"),
        (GCP_N2, "skypilot:custom-cpu-ubuntu-2204"),
        (K8S_T4_GKE, "skypilot:custom-gpu-ubuntu-2204"),
        (K8S_CPU, "skypilot:custom-cpu-ubuntu-2204"),
    ],
)
def test_default_images_come_from_the_catalog(offer, tag):
    region = offer.region if offer.cloud == "aws" else None
    expected = catalog().image_for(offer.cloud, region, tag)
    assert expected is not None
    assert program_inputs(spec(offer), context())["image"] == expected


def test_aws_default_image_is_per_region():
    east = program_inputs(spec(AWS_M5.model_copy(update={"region": "us-east-1"})), context())
    west = program_inputs(spec(AWS_M5), context())
    assert east["image"] != west["image"] and west["image"].startswith("ami-")


def test_image_id_forms():
    lookup = catalog().image_for
    kw = {"accelerator": None, "arch": "x86_64", "lookup": lookup}
    assert resolve_image("aws", "us-east-1", "ami-123", **kw) == "ami-123"
    assert resolve_image("kubernetes", None, "docker:ubuntu:22.04", **kw) == "ubuntu:22.04"
    assert resolve_image("gcp", None, "skypilot:cpu-debian-11", **kw).startswith("projects/")
    with pytest.raises(StackError, match="skypilot:nope has no aws image in us-east-1"):
        resolve_image("aws", "us-east-1", "skypilot:nope", **kw)
    with pytest.raises(StackError, match=r"no default image .* for aws region mars-1"):
        resolve_image("aws", "mars-1", None, **kw)


# --- ports and per-cloud inputs ---------------------------------------------------------------


def test_port_ranges_are_parsed_merged_and_checked():
    assert port_ranges(["8080", "9000-9010", "9005-9020", "22"]) == [
        [22, 22],
        [8080, 8080],
        [9000, 9020],
    ]
    with pytest.raises(StackError, match="'http' is not a number"):
        port_ranges(["http"])
    with pytest.raises(StackError, match="outside 1-65535"):
        port_ranges(["70000"])


def test_aws_inputs_keep_the_zone_id_and_tag_the_cluster():
    got = program_inputs(spec(AWS_G5, labels={"team": "ml"}), context())
    assert got["zone_id"] == "use1-az4" and "zone_name" not in got
    assert got["key_name"] == "skyform-c1-7f8fc1957094"
    assert got["tags"] == {"team": "ml", "skyform:cluster": "c1", "skyform:plan": PLAN_DIGEST}
    named_zone = AWS_G5.model_copy(update={"zone": "us-east-1a"})
    got = program_inputs(spec(named_zone), context())
    assert got["zone_name"] == "us-east-1a" and "zone_id" not in got
    assert "zone_id" not in program_inputs(
        spec(AWS_G5.model_copy(update={"zone": None})), context()
    )


def test_gcp_inputs_attach_gpus_only_to_n1():
    n1 = program_inputs(spec(GCP_N1_V100), context())
    assert n1["accelerator"] == {"type": "nvidia-tesla-v100", "count": 2} and n1["gpu"]
    a2 = program_inputs(spec(GCP_A2), context())
    assert "accelerator" not in a2 and a2["gpu"]
    n2 = program_inputs(spec(GCP_N2), context())
    assert "accelerator" not in n2 and not n2["gpu"]


def test_gcp_without_project_leaves_it_to_the_environment():
    assert "project" not in program_inputs(spec(GCP_N2), context(gcp_project=None))


def test_gcp_tpu_is_refused_clearly():
    tpu = PlacedOffer(
        cloud="gcp", region="us-central1", zone="us-central1-a", instance_type="TPU-VM",
        spot=False, hourly_price=1.0, accelerator="tpu-v5litepod-4", accelerator_count=1,
    )  # fmt: skip
    with pytest.raises(StackError, match=r"TPU placements .* are not provisioned"):
        program_inputs(spec(tpu), context())


def test_kubernetes_gpu_node_selector_depends_on_the_cluster_kind():
    gke = program_inputs(spec(K8S_T4_GKE), context())
    assert gke["gpu"] == {
        "count": 1,
        "node_selector": {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"},
    }
    assert gke["context"] == "gke_proj_us-central1-a_train"
    other = program_inputs(spec(K8S_H100), context())
    assert other["gpu"]["node_selector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    forced = program_inputs(spec(K8S_H100), context(k8s_gke=True))
    assert forced["gpu"]["node_selector"] == {
        "cloud.google.com/gke-accelerator": "nvidia-h100-80gb"
    }


def test_kubernetes_sizes_are_quantities():
    got = program_inputs(spec(K8S_CPU, ports=["8080-8081"]), context())
    assert (got["cpus"], got["memory"]) == ("500m", "1536Mi")
    assert got["ports"] == [8080, 8081]
    assert "context" not in got and "gpu" not in got
    assert program_inputs(spec(K8S_H100), context())["memory"] == "64Gi"


def test_kubernetes_refuses_unknown_gpus_and_too_many_ports():
    odd = K8S_H100.model_copy(update={"accelerator": "Z9"})
    with pytest.raises(StackError, match="no Kubernetes node label is known for GPU Z9"):
        program_inputs(spec(odd), context())
    with pytest.raises(StackError, match="101 ports requested"):
        program_inputs(spec(K8S_CPU, ports=["10000-10100"]), context())


def test_inputs_carry_the_public_key_never_a_private_one():
    for offer in (AWS_G5, GCP_N2, K8S_CPU):
        got = program_inputs(spec(offer), context())
        assert got["ssh_public_key"] == PUBLIC_KEY
        assert "PRIVATE KEY" not in repr(got)
