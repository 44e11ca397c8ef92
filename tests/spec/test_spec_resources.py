"""resources: accelerator forms, cpus/memory, infra strings, any_of/ordered grouping."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from skyform.errors import SpecError
from skyform.spec import JobRecovery, Range, ResourceRequest, load_task_text
from skyform.spec.inputs import TaskInputs


def groups(resources: str) -> list[list[ResourceRequest]]:
    text = f"resources:\n{resources}\nrun: echo\n"
    dag = load_task_text(text, path_label="t.yaml", inputs=TaskInputs(environ={}))
    return [list(g) for g in dag.tasks[0].resources.groups]


def one(resources: str) -> ResourceRequest:
    found = groups(resources)
    assert len(found) == 1 and len(found[0]) == 1, found
    return found[0][0]


def accels(found: list[list[ResourceRequest]]) -> list[list[tuple]]:
    return [[(r.accelerator, r.accelerator_count) for r in g] for g in found]


def test_no_resources_is_one_open_request():
    dag = load_task_text("run: echo\n", inputs=TaskInputs(environ={}))
    assert dag.tasks[0].resources.groups == ((ResourceRequest(),),)
    assert ResourceRequest().disk_size == 256
    assert ResourceRequest().use_spot is False


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("V100", ("V100", 1.0)),
        ("V100:8", ("V100", 8.0)),
        ("A10:0.5", ("A10", 0.5)),
        ("a10g", ("A10G", 1.0)),
        ("A100-80GB:4", ("A100-80GB", 4.0)),
        ("'H100: 2'", ("H100", 2.0)),
        ("{T4: 2}", ("T4", 2.0)),
        ("tpu-v2-8", ("tpu-v2-8", 1.0)),
    ],
)
def test_accelerator_string_forms(spec: str, expected: tuple):
    req = one(f"  accelerators: {spec}")
    assert (req.accelerator, req.accelerator_count) == expected


def test_gpus_is_an_alias():
    assert one("  gpus: H100:8").accelerator == "H100"


def test_tpu_implies_gcp_like_skypilot():
    assert one("  accelerators: tpu-v2-8").cloud == "gcp"
    assert one("  accelerators: tpu-v2-8\n  infra: k8s").cloud == "kubernetes"


def test_accelerator_mapping_is_one_group_to_pick_the_best_from():
    found = groups("  accelerators: {A100: 1, V100: 2}")
    assert accels(found) == [[("A100", 1.0), ("V100", 2.0)]]


def test_flow_set_with_counts_in_the_names():
    found = groups("  accelerators: {'A100-40GB:1', 'T4:1', 'T4:4'}")
    assert accels(found) == [[("A100-40GB", 1.0), ("T4", 1.0), ("T4", 4.0)]]


def test_accelerator_list_is_ordered_groups():
    found = groups("  accelerators: [L4:1, H100:1]\n  use_spot: true")
    assert accels(found) == [[("L4", 1.0)], [("H100", 1.0)]]
    assert all(r.use_spot for g in found for r in g)


def test_duplicate_alternatives_collapse():
    found = groups("  accelerators: [V100, 'V100:1', T4]")
    assert accels(found) == [[("V100", 1.0)], [("T4", 1.0)]]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("4", Range(value=4)), ("4+", Range(value=4, at_least=True)), ("0.5", Range(value=0.5))],
)
def test_cpus(value: str, expected: Range):
    assert one(f"  cpus: '{value}'").cpus == expected


def test_cpus_as_number():
    assert one("  cpus: 8").cpus == Range(value=8)


@pytest.mark.parametrize(
    ("value", "gib", "at_least"),
    [
        ("32", 32, False),
        ("32+", 32, True),
        ("32GB", 32, False),
        ("64GB+", 64, True),
        ("512MB", 0.5, False),
        ("1TB", 1024, False),
        ("16Gi+", 16, True),
        ("2gb", 2, False),
    ],
)
def test_memory_units_like_skypilot(value: str, gib: float, at_least: bool):
    assert one(f"  memory: '{value}'").memory == Range(value=gib, at_least=at_least)


def test_range_admits():
    assert Range(value=4, at_least=True).admits(8)
    assert not Range(value=4).admits(8)
    assert Range(value=4).admits(4.0)
    assert str(Range(value=4, at_least=True)) == "4+"


@pytest.mark.parametrize(
    ("infra", "where"),
    [
        ("aws", ("aws", None, None, None)),
        ("AWS/us-east-1", ("aws", "us-east-1", None, None)),
        ("aws/us-east-1/us-east-1a", ("aws", "us-east-1", "us-east-1a", None)),
        ("gcp/*/us-central1-a", ("gcp", None, "us-central1-a", None)),
        ("*/us-east-1", (None, "us-east-1", None, None)),
        ("*", (None, None, None, None)),
        ("k8s", ("kubernetes", None, None, None)),
        ("kubernetes", ("kubernetes", None, None, None)),
        ("k8s/my-ctx", ("kubernetes", None, None, "my-ctx")),
        (
            "k8s/arn:aws:eks:us-east-1:1:cluster/c",
            ("kubernetes", None, None, "arn:aws:eks:us-east-1:1:cluster/c"),
        ),
        ("ssh", ("ssh", None, None, None)),
        ("ssh/lab", ("ssh", None, None, "lab")),
        ("local", ("local", None, None, None)),
        ("azure/eastus", ("azure", "eastus", None, None)),
        ("OCI", ("oci", None, None, None)),
    ],
)
def test_infra_strings(infra: str, where: tuple):
    req = one(f"  infra: '{infra}'")
    assert (req.cloud, req.region, req.zone, req.context) == where


def test_legacy_cloud_region_zone():
    req = one("  cloud: GCP\n  region: us-central1\n  zone: us-central1-a")
    assert (req.cloud, req.region, req.zone) == ("gcp", "us-central1", "us-central1-a")
    k8s = one("  cloud: kubernetes\n  region: my-context")
    assert (k8s.cloud, k8s.context, k8s.region) == ("kubernetes", "my-context", None)


def test_infra_property_round_trips():
    assert one("  infra: aws/us-east-1").infra == "aws/us-east-1"
    assert one("  infra: gcp/*/us-central1-a").infra == "gcp/*/us-central1-a"
    assert one("  infra: k8s/ctx").infra == "kubernetes/ctx"
    assert one("  cpus: 2").infra == "*"


def test_any_of_is_one_group_overlaid_on_the_outer_resources():
    found = groups(
        "  cpus: 4+\n  use_spot: true\n  labels: {team: ml, env: dev}\n"
        "  any_of:\n"
        "    - infra: aws\n      accelerators: A10G\n"
        "    - infra: gcp\n      accelerators: L4\n      use_spot: false\n      labels: {env: prod}"
    )
    assert len(found) == 1
    aws, gcp = found[0]
    assert (aws.cloud, aws.accelerator, aws.use_spot) == ("aws", "A10G", True)
    assert (gcp.cloud, gcp.accelerator, gcp.use_spot) == ("gcp", "L4", False)
    assert aws.cpus == gcp.cpus == Range(value=4, at_least=True)
    assert aws.labels == {"team": "ml", "env": "dev"}
    assert gcp.labels == {"team": "ml", "env": "prod"}


def test_ordered_is_one_group_per_entry():
    found = groups(
        "  ordered:\n    - infra: aws\n      accelerators: A10g\n"
        "    - infra: gcp\n      accelerators: L4"
    )
    assert [[(r.cloud, r.accelerator) for r in g] for g in found] == [
        [("aws", "A10G")],
        [("gcp", "L4")],
    ]


def test_accelerator_set_expands_within_each_any_of_entry():
    found = groups(
        "  accelerators: {A100: 1, V100: 1}\n  any_of:\n    - infra: aws\n    - infra: gcp"
    )
    assert [[(r.cloud, r.accelerator) for r in g] for g in found] == [
        [("aws", "A100"), ("aws", "V100"), ("gcp", "A100"), ("gcp", "V100")]
    ]


def test_single_accelerator_with_ordered_is_allowed():
    found = groups("  accelerators: H100:8\n  ordered:\n    - infra: aws\n    - infra: gcp")
    assert [[(r.cloud, r.accelerator_count) for r in g] for g in found] == [
        [("aws", 8.0)],
        [("gcp", 8.0)],
    ]


def test_entry_may_override_infra_from_the_outer_resources():
    found = groups("  infra: aws\n  any_of:\n    - cpus: 4\n    - infra: gcp")
    assert [r.cloud for r in found[0]] == ["aws", "gcp"]


def test_disk_ports_image_labels_cost():
    req = one(
        "  disk_size: 1TB\n  disk_tier: BEST\n  network_tier: best\n"
        "  ports: [8080, '8000-8010', 22, 8011]\n"
        "  image_id: {us-east-1: ami-1, us-west-2: ami-2}\n"
        "  max_hourly_cost: 3.5\n  instance_type: p3.2xlarge"
    )
    assert req.disk_size == 1024
    assert (req.disk_tier, req.network_tier) == ("best", "best")
    assert req.ports == ("22", "8000-8011", "8080")
    assert req.image_id == {"us-east-1": "ami-1", "us-west-2": "ami-2"}
    assert req.max_hourly_cost == 3.5
    assert req.instance_type == "p3.2xlarge"
    assert one("  ports: 8080").ports == ("8080",)


@pytest.mark.parametrize(
    ("yaml_value", "expected"),
    [
        ("failover", JobRecovery(strategy="FAILOVER")),
        ("EAGER_NEXT_REGION", JobRecovery(strategy="EAGER_NEXT_REGION")),
        (
            "{strategy: failover, max_restarts_on_errors: 3, recover_on_exit_codes: [33, 1]}",
            JobRecovery(
                strategy="FAILOVER", max_restarts_on_errors=3, recover_on_exit_codes=(1, 33)
            ),
        ),
        ("{max_restarts_on_errors: 2}", JobRecovery(max_restarts_on_errors=2)),
        ("{recover_on_exit_codes: 7}", JobRecovery(recover_on_exit_codes=(7,))),
    ],
)
def test_job_recovery_forms(yaml_value: str, expected: JobRecovery):
    assert one(f"  job_recovery: {yaml_value}").job_recovery == expected


def test_legacy_spot_recovery_becomes_job_recovery():
    assert one("  spot_recovery: FAILOVER").job_recovery == JobRecovery(strategy="FAILOVER")


@pytest.mark.parametrize(
    ("yaml_value", "enabled", "minutes", "down"),
    [
        ("true", True, 5, False),
        ("false", False, 5, False),
        ("10", True, 10, False),
        ("2h", True, 120, False),
        ("1d", True, 1440, False),
        ("{idle_minutes: 30, down: true}", True, 30, True),
    ],
)
def test_autostop_forms(yaml_value: str, enabled: bool, minutes: int, down: bool):
    stop = one(f"  autostop: {yaml_value}").autostop
    assert (stop.enabled, stop.idle_minutes, stop.down) == (enabled, minutes, down)


def test_requests_are_frozen_and_hashable():
    req = one("  infra: aws\n  labels: {a: b}\n  image_id: {us-east-1: ami-1}")
    assert hash(req) == hash(req.model_copy())
    assert len({req, req.model_copy()}) == 1
    with pytest.raises(ValidationError, match="Instance is frozen"):
        req.cloud = "gcp"  # type: ignore[misc]


def test_error_inside_an_entry_points_at_the_entry():
    with pytest.raises(SpecError) as caught:
        groups("  any_of:\n    - infra: aws\n    - infra: gcp\n      cpus: lots")
    assert caught.value.field == "resources.any_of[1].cpus"
    assert (caught.value.line, caught.value.column) == (5, 13)
