"""`skyform export`: plain Pulumi projects that register what skyform's inline program does."""

from __future__ import annotations

import ast
import json

import pytest
import yaml
from pulumi_harness import program, run_exported, run_program
from pulumi_specs import (
    AWS_G5,
    AWS_M5,
    GCP_A2,
    GCP_N1_V100,
    K8S_CPU,
    K8S_H100,
    LOCAL,
    catalog,
    plan_of,
    spec,
)

from skyform.config import Config, PulumiSettings
from skyform.errors import StackError
from skyform.plan.model import Action, ClusterChange, PlacedOffer
from skyform.plan.planfile import plan_bytes, plan_digest, write_plan
from skyform.stacks.pulumi.cloud import pulumi_cloud
from skyform.stacks.pulumi.context import input_context
from skyform.stacks.pulumi.export import export_plan
from skyform.stacks.pulumi.inputs import program_inputs

FILES = ["Pulumi.yaml", "Pulumi.{}.yaml", "__main__.py", "requirements.txt", "README.md"]


@pytest.fixture(autouse=True)
def gcp_project(monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "ml-prod")


def export(tmp_path, *specs, config=None):
    plan = plan_of(*specs)
    digest = plan_digest(plan_bytes(plan))
    config = config or Config()
    result = export_plan(plan, digest, tmp_path / "out", config=config, catalog=catalog())
    return result, digest


CASES = [
    spec(AWS_G5, name="aws-gpu", labels={"team": "ml"}, ports=["8888"]),
    spec(AWS_M5, name="aws-spot", nodes=3, disk_size=64, disk_tier="high"),
    spec(GCP_N1_V100, name="gcp-n1", nodes=2, labels={"Team": "ML Ops"}),
    spec(GCP_A2, name="gcp-a2", ports=["6006-6008"]),
    spec(K8S_H100, name="k8s-gpu", nodes=2, ports=["8080"]),
    spec(K8S_CPU, name="k8s-cpu"),
]


@pytest.mark.parametrize("cluster", CASES, ids=lambda s: s.name)
def test_exported_program_registers_the_same_resources_with_the_same_inputs(tmp_path, cluster):
    result, digest = export(tmp_path, cluster)
    (project,) = result.projects
    ctx = input_context(
        cluster.offer.cloud, config=Config(), catalog=catalog(), plan_digest=digest,
        context_name=cluster.offer.context,
    )  # fmt: skip
    inline = run_program(
        program(cluster.offer.cloud, program_inputs(cluster, ctx)), stack=cluster.name
    )
    exported = run_exported(project.directory, cluster.name)  # fails if it imports skyform
    assert exported.comparable() == inline.comparable()
    assert exported.outputs == inline.outputs
    assert len(inline.resources) >= 3 + cluster.num_nodes - 1


def test_a_configured_project_name_carries_into_the_export(tmp_path):
    cluster = CASES[1]
    config = Config(pulumi=PulumiSettings(project="ml"))
    result, digest = export(tmp_path, cluster, config=config)
    directory = result.projects[0].directory
    assert yaml.safe_load((directory / "Pulumi.yaml").read_text())["name"] == "ml"
    stack_config = yaml.safe_load((directory / "Pulumi.aws-spot.yaml").read_text())["config"]
    assert list(stack_config) == ["ml:cluster"]
    ctx = input_context("aws", config=config, catalog=catalog(), plan_digest=digest)
    inline = run_program(
        program("aws", program_inputs(cluster, ctx)), stack="aws-spot", project="ml"
    )
    assert run_exported(directory, "aws-spot").comparable() == inline.comparable()


def test_one_project_per_cloud_cluster_and_local_ones_are_skipped(tmp_path):
    result, _ = export(tmp_path, CASES[0], CASES[2], CASES[5], spec(LOCAL, name="dev"))
    assert [(p.cluster, p.cloud) for p in result.projects] == [
        ("aws-gpu", "aws"),
        ("gcp-n1", "gcp"),
        ("k8s-cpu", "kubernetes"),
    ]
    for p in result.projects:
        assert p.directory == tmp_path / "out" / p.cluster
        assert sorted(p.files) == sorted(f.format(p.cluster) for f in FILES)
        assert sorted(f.name for f in p.directory.iterdir()) == sorted(p.files)
    (skipped,) = result.skipped
    assert (skipped.cluster, skipped.infra) == ("dev", "local")
    assert skipped.reason == "local clusters are not Pulumi stacks: nothing to export"
    assert not (tmp_path / "out" / "dev").exists()


def test_clusters_the_plan_deletes_are_skipped(tmp_path):
    plan = plan_of(CASES[0])
    delete = ClusterChange(cluster="old", action=Action.DELETE, reason="gone", before=CASES[2])
    plan = plan.model_copy(update={"changes": [*plan.changes, delete]})
    result = export_plan(plan, "sha256:x", tmp_path / "out", config=Config(), catalog=catalog())
    assert [p.cluster for p in result.projects] == ["aws-gpu"]
    assert [(s.cluster, s.infra, s.reason) for s in result.skipped] == [
        ("old", "gcp/us-central1/us-central1-a", "the plan deletes it: nothing to export")
    ]


def test_project_files_are_plain_pulumi(tmp_path):
    result, digest = export(tmp_path, CASES[2])
    directory = result.projects[0].directory
    project = yaml.safe_load((directory / "Pulumi.yaml").read_text())
    assert project["name"] == "skyform"  # same project/stack as skyform's: same URNs
    assert project["runtime"] == {
        "name": "python",
        "options": {"toolchain": "pip", "virtualenv": "venv"},
    }
    stack_file = (directory / "Pulumi.gcp-n1.yaml").read_text()
    assert digest in stack_file
    config = yaml.safe_load(stack_file)["config"]
    assert list(config) == ["skyform:cluster"]
    inputs = config["skyform:cluster"]
    assert inputs["project"] == "ml-prod" and inputs["machine_type"] == "n1-standard-8"
    assert inputs["labels"]["skyform-plan"] == digest.replace(":", "_")[:63]
    main = (directory / "__main__.py").read_text()
    tree = ast.parse(main)
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
    }
    assert imported == {"pulumi", "pulumi_gcp"}
    assert 'register(pulumi.Config().require_object("cluster"))' in main.splitlines()[-1]
    assert ast.get_docstring(tree).startswith("One skyform cluster on GCP")


def test_requirements_are_pinned_to_tested_major_versions(tmp_path):
    result, _ = export(tmp_path, CASES[0], CASES[2], CASES[4])
    for p in result.projects:
        lines = [
            line
            for line in (p.directory / "requirements.txt").read_text().splitlines()
            if line and not line.startswith("#")
        ]
        assert lines == list(pulumi_cloud(p.cloud).requirements)
        for line in lines:
            _, _, bounds = line.partition(">=")
            assert ",<" in bounds, line


def test_readme_says_how_to_run_it(tmp_path):
    result, _ = export(tmp_path, CASES[4])
    readme = (result.projects[0].directory / "README.md").read_text()
    assert "pulumi stack init k8s-gpu" in readme and "pulumi up" in readme
    assert "kubectl port-forward svc/k8s-gpu-0-ssh 2222:22" in readme


def test_gcp_export_without_a_project_says_where_to_set_it(tmp_path, monkeypatch):
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))
    result, _ = export(tmp_path, CASES[3])
    directory = result.projects[0].directory
    assert (
        "project"
        not in yaml.safe_load((directory / "Pulumi.gcp-a2.yaml").read_text())["config"][
            "skyform:cluster"
        ]
    )
    assert "No GCP project was configured" in (directory / "README.md").read_text()


def test_a_cluster_that_cannot_be_exported_leaves_nothing_written(tmp_path):
    tpu = PlacedOffer(
        cloud="gcp", region="us-central1", zone="us-central1-a", instance_type="TPU-VM",
        spot=False, hourly_price=1.0, accelerator="tpu-v5litepod-4", accelerator_count=1,
    )  # fmt: skip
    with pytest.raises(StackError, match="TPU placements"):
        export(tmp_path, CASES[0], spec(tpu, name="tpu"))
    assert not (tmp_path / "out").exists()


# --- the command -----------------------------------------------------------------------------


def test_cli_exports_and_names_what_it_skipped(cli, tmp_path):
    plan_file = tmp_path / "plan.json"
    write_plan(plan_of(CASES[0], spec(LOCAL, name="dev")), plan_file)
    result = cli("export", plan_file, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "exported aws-gpu (aws/us-east-1/use1-az4)" in result.stdout
    assert "skipped  dev (local): local clusters are not Pulumi stacks: nothing to export" in (
        result.stdout
    )
    assert f"cd {tmp_path / 'out' / 'aws-gpu'} && pulumi stack init aws-gpu && pulumi up" in (
        result.stdout
    )
    assert (tmp_path / "out" / "aws-gpu" / "__main__.py").is_file()


def test_cli_with_nothing_to_export_says_so(cli, tmp_path):
    plan_file = tmp_path / "plan.json"
    write_plan(plan_of(spec(LOCAL, name="dev")), plan_file)
    result = cli("export", plan_file, "-o", tmp_path / "out", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["projects"] == []
    assert data["skipped"][0]["cluster"] == "dev"
    text = cli("export", plan_file, "-o", tmp_path / "out")
    assert "Nothing to export: the plan has no aws, gcp or kubernetes clusters." in text.stdout


def test_cli_refuses_a_bad_plan_and_writes_nothing(cli, tmp_path):
    bad = tmp_path / "plan.json"
    bad.write_text("{not json")
    result = cli("export", bad, "-o", tmp_path / "out")
    assert result.exit_code == 1
    assert "is not a skyform plan" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()
    taken = tmp_path / "file"
    taken.write_text("x")
    write_plan(plan_of(CASES[0]), tmp_path / "ok.json")
    result = cli("export", tmp_path / "ok.json", "-o", taken)
    assert result.exit_code == 1 and "it is a regular file, not a directory" in result.stderr


@pytest.mark.parametrize("name", ["..", "../../escaped"])
def test_export_writes_nothing_for_a_name_that_leaves_the_directory(tmp_path, name):
    """Confinement (issue 11): `export -o DIR` joins the cluster name into DIR only after
    checking the result stays inside, and checks every cluster before writing any."""
    from skyform.errors import UnsafePathError

    with pytest.raises(UnsafePathError):
        export(tmp_path, spec(AWS_G5, name="fine"), spec(AWS_M5, name=name))
    assert not (tmp_path / "out" / "fine").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
