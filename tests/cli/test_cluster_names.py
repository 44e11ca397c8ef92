"""Cluster names as SkyPilot takes them with -c (`my_cluster`, `Cuda_11.8`): planned under an
engine-safe name (`cuda-11-8`: the Pulumi stack, the Kubernetes objects, state, paths),
shown as typed, both in the plan; a name SkyPilot refuses is refused (issue 28, "Verbs")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyform.plan.planview import view_of


def _task(tmp_path: Path, infra: str = "aws") -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(f"resources: {{infra: {infra}, cpus: 2}}\nrun: echo hi\n")
    return path


def test_a_skypilot_name_is_planned_under_an_engine_name_and_shown_as_typed(cli, tmp_path):
    out = tmp_path / "p.json"
    planned = cli("plan", _task(tmp_path), "-c", "Cuda_11.8", "-o", out)
    assert planned.exit_code == 0, planned.output
    assert '# cluster "cuda-11-8" will be created' in planned.stdout
    assert 'shown as "Cuda_11.8", as typed; the engines, state and paths name it "cuda-11-8"' in (
        planned.stdout
    )
    plan = json.loads(out.read_text())
    (change,) = plan["changes"]
    assert (change["cluster"], change["after"]["shown_as"]) == ("cuda-11-8", "Cuda_11.8")
    assert plan["tasks"][0]["cluster_name_from"] == '--cluster "Cuda_11.8"'
    assert view_of(out.read_bytes(), str(out)).changes[0].after.shown_name == "Cuda_11.8"
    assert 'shown as "Cuda_11.8", as typed' in cli("show", out).stdout  # read back strictly
    exported = cli("export", out, "-o", tmp_path / "infra")
    assert exported.exit_code == 0, exported.output
    assert (tmp_path / "infra" / "cuda-11-8" / "Pulumi.cuda-11-8.yaml").is_file()  # the stack


def test_a_plan_without_typed_names_keeps_its_bytes(cli, tmp_path):
    out = tmp_path / "p.json"
    assert cli("plan", _task(tmp_path), "-c", "dev", "-o", out).exit_code == 0
    assert "shown_as" not in out.read_text()  # plans made before keep their digest


def test_a_plan_whose_shown_name_is_not_its_own_is_refused(cli, tmp_path):
    out = tmp_path / "p.json"
    cli("plan", _task(tmp_path), "-c", "my_cluster", "-o", out)
    plan = json.loads(out.read_text())
    plan["changes"][0]["after"]["shown_as"] = "other_name"
    out.write_text(json.dumps(plan))
    refused = cli("show", out)
    assert refused.exit_code != 0 and "shown as 'other_name'" in refused.stderr


@pytest.mark.parametrize("name", ["9lives", "bad_", "my cluster", "a" * 41])
def test_a_name_skypilot_refuses_is_refused(cli, tmp_path, name):
    refused = cli("plan", _task(tmp_path), "-c", name)
    assert refused.exit_code == 1
    assert f"{name!r} is not a valid cluster name" in refused.stderr
    assert "Pass --cluster/-c " in refused.stderr
