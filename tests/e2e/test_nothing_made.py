"""A failed apply that created nothing leaves no cluster record: the engine's SDK missing
(here: the gcp extra, hidden from a real `skyform` process), the Pulumi CLI missing. And a
record such a failure left behind in an older version is removed by `down` and by a destroy
plan, although its engine still cannot load."""

from __future__ import annotations

import json
import os

import pytest
from e2ekit import task_file

from skyform.plan.planfile import read_plan
from skyform.state.db import open_state
from skyform.state.models import ClusterRecord, ClusterStatus

pytestmark = pytest.mark.e2e

GCP = "name: g\nresources: {infra: gcp, cpus: 2}\nrun: echo hi\n"
AWS = "name: a\nresources: {infra: aws, cpus: 2}\nrun: echo hi\n"


@pytest.fixture
def without_gcp_sdk(tmp_path, monkeypatch):
    """skyform processes started from here cannot import pulumi_gcp (as without the extra)."""
    block = tmp_path / "no-gcp-sdk"
    block.mkdir()
    (block / "sitecustomize.py").write_text("import sys\nsys.modules['pulumi_gcp'] = None\n")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(block), os.environ.get("PYTHONPATH")]))
    )


def _state(sky) -> list[dict]:
    return json.loads(sky("status", "--json").stdout)


def test_apply_without_the_engine_sdk_leaves_no_record(sky, tmp_path, without_gcp_sdk):
    task = task_file(tmp_path, "g.yaml", GCP)
    result = sky("apply", task, "-y")
    assert result.exit_code == 1
    assert "the Pulumi SDK for gcp is not installed" in result.stderr
    assert "pip install 'skyform[gcp]'" in result.stderr
    assert _state(sky) == []
    report = json.loads(sky("cost-report", "--json", check=0).stdout)
    assert report["clusters"] == []  # nothing billed either


def test_apply_without_the_pulumi_cli_leaves_no_record(sky, tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no `pulumi` anywhere on it
    task = task_file(tmp_path, "a.yaml", AWS)
    result = sky("apply", task, "-y")
    assert result.exit_code == 1
    assert "the Pulumi CLI is not installed" in result.stderr
    assert _state(sky) == []


@pytest.mark.parametrize("how", ["down", "destroy plan"])
def test_an_init_record_an_older_version_left_is_removed(sky, tmp_path, without_gcp_sdk, how):
    task = task_file(tmp_path, "g.yaml", GCP)
    sky("plan", task, "-o", "up.json", check=0)
    plan, _ = read_plan(tmp_path / "up.json")
    spec = plan.changes[0].after
    assert spec is not None
    db = open_state()  # what an older skyform recorded before its engine failed to load
    db.put_cluster(
        ClusterRecord(
            name="g",
            status=ClusterStatus.INIT,
            spec=spec,
            source=str(task),
            hourly_price=spec.offer.hourly_price,
        )
    )
    db.close()
    assert [c["status"] for c in _state(sky)] == ["INIT"]
    if how == "down":
        removed = sky("down", "-y", "g")
    else:
        sky("plan", task, "--destroy", "-o", "down.json", check=0)
        removed = sky("apply", "down.json")
    assert removed.exit_code == 0, removed.output
    assert "nothing was ever made for it" in removed.stdout
    assert _state(sky) == []
