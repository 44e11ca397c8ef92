"""Architecture and egress in plans, as a user reads them (bundled catalog)."""

from __future__ import annotations

import json

import pytest


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def planned(cli, task, tmp_path) -> dict:
    out = tmp_path / "p.json"
    result = cli("plan", task, "-o", out)
    assert result.exit_code == 0, result.output
    return {"plan": json.loads(out.read_text()), "text": result.stdout, "out": out}


def test_aws_cpus_default_to_x86_and_the_plan_shows_it(cli, tmp_path):
    task = write(tmp_path, "t.yaml", "resources:\n  cloud: aws\n  cpus: 4+\nrun: echo hi\n")
    got = planned(cli, task, tmp_path)
    [placement] = got["plan"]["tasks"]
    assert placement["offer"]["arch"] == "x86_64"
    assert not placement["offer"]["instance_type"].startswith("m7g")
    assert {a["offer"]["arch"] for a in placement["alternatives"]} == {"x86_64"}
    assert 'arch           = "x86_64"' in got["text"]
    assert "ARCH" in got["text"]
    markdown = cli("show", got["out"], "--markdown").stdout
    assert "| Arch |" in markdown and "| x86_64 |" in markdown


@pytest.mark.parametrize(
    "resources",
    [
        "  cloud: aws\n  cpus: 4+\nskyform:\n  arch: arm64\n",
        "  cloud: aws\n  instance_type: m7g.xlarge\n",
        "  cloud: aws\n  cpus: 4+\n  image_id: skypilot:custom-cpu-ubuntu-arm64\n",
    ],
    ids=["skyform-arch", "instance-type", "image"],
)
def test_a_task_opts_into_arm64(cli, tmp_path, resources):
    task = write(tmp_path, "t.yaml", "resources:\n" + resources + "run: echo hi\n")
    got = planned(cli, task, tmp_path)
    assert got["plan"]["tasks"][0]["offer"]["arch"] == "arm64"
    assert 'arch           = "arm64"' in got["text"]


def test_an_unknown_arch_is_a_located_error(cli, tmp_path):
    task = write(tmp_path, "t.yaml", "resources: {cloud: aws}\nskyform:\n  arch: riscv\nrun: x\n")
    result = cli("plan", task)
    assert result.exit_code == 1
    assert "t.yaml:3:" in result.stderr and "arch must be one of x86_64, arm64, any" in (
        result.stderr
    )


INPUTS = """\
resources:
  cloud: gcp
  cpus: 4+
inputs:
  s3://corpus/tokens: 100
{pin}run: echo hi
"""


def test_egress_from_a_bucket_of_unknown_region_is_an_upper_bound(cli, tmp_path):
    task = write(tmp_path, "t.yaml", INPUTS.format(pin=""))
    got = planned(cli, task, tmp_path)
    [flow] = got["plan"]["egress"]
    assert flow["upper_bound"] is True
    assert "at most $" in got["text"] and "inputs_location: aws/REGION" in got["text"]
    assert "at most $" in cli("show", got["out"], "--markdown").stdout
    pinned = write(
        tmp_path, "pinned.yaml", INPUTS.format(pin="skyform:\n  inputs_location: aws/us-east-1\n")
    )
    got = planned(cli, pinned, tmp_path)
    assert got["plan"]["egress"][0]["upper_bound"] is False
    assert "at most" not in got["text"]


def test_considered_table_says_why_a_dearer_row_won(cli, tmp_path):
    task = write(
        tmp_path,
        "t.yaml",
        "resources:\n  cpus: 4+\ninputs:\n  s3://corpus/tokens: 500\n"
        "skyform:\n  inputs_location: aws/us-east-1\nrun: echo hi\n",
    )
    got = planned(cli, task, tmp_path)
    [placement] = got["plan"]["tasks"]
    chosen = next(a for a in placement["alternatives"] if a["chosen"])
    rows = placement["alternatives"]
    cheaper = [a for a in rows if a["estimated_cost"] < chosen["estimated_cost"]]
    assert cheaper, "a cheaper-to-run row exists that the egress rules out"
    assert all(a["egress_cost"] > chosen["egress_cost"] for a in cheaper)
    assert "EGRESS $" in got["text"] and "Chosen although dearer to run" in got["text"]
