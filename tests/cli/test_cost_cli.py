"""`skyform cost PLAN|diff|reprice` and `skyform cost-report` as a user drives them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import heavy_modules, modules_loaded_by

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
sys.path.insert(0, str(REPO / "tests" / "cost"))
from costkit import dearer_g6_without_m7a, v8_catalog  # noqa: E402


@pytest.fixture
def plan_file(cli, tmp_path) -> Path:
    out = tmp_path / "plan.json"
    assert cli("plan", EXAMPLES / "pipeline.yaml", "-o", out).exit_code == 0
    return out


def test_cost_plan_is_cost_estimate_plan(cli, plan_file):
    short = cli("cost", plan_file)
    assert short.exit_code == 0, short.output
    assert short.stdout == cli("cost", "estimate", plan_file).stdout
    assert "train-pipeline-train" in short.stdout and "SPOT SAVING" in short.stdout


def test_json_figures_are_the_plans(cli, plan_file):
    plan = json.loads(plan_file.read_text())
    cost = json.loads(cli("cost", plan_file, "--json").stdout)
    assert cost["totals"]["total_cost"] == plan["summary"]["estimated_cost"]
    assert cost["totals"]["egress_cost"] == plan["summary"]["egress_cost"]
    assert cost["totals"]["hourly_after"] == plan["summary"]["hourly_after"]
    train = next(c for c in cost["clusters"] if c["cluster"] == "train-pipeline-train")
    # g6.xlarge spot in use2-az2 at 0.2599 for 6 h; its on-demand twin is 0.8048/h
    assert train["on_demand_hourly_cost"] == 0.8048
    assert train["spot_saving"] == pytest.approx((0.8048 - 0.2599) * 6)
    # 20 GB of tokens from an AWS region the task does not name: AWS's highest internet rate
    assert train["egress_cost"] == pytest.approx(20 * 0.114)


def test_csv_and_markdown(cli, plan_file):
    csv = cli("cost", plan_file, "--csv").stdout.splitlines()
    assert csv[0].startswith("cluster,task,action,cloud,region,zone,instance_type,spot,nodes")
    assert [line.split(",")[0] for line in csv[1:]] == [
        "train-pipeline-preprocess",
        "train-pipeline-train",
        "train-pipeline-eval",
        "TOTAL",
    ]
    md = cli("cost", plan_file, "--markdown").stdout
    assert md.startswith("### skyform plan for `")  # the plan comment ...
    assert "#### Cost estimate" in md  # ... and its cost, in one body
    assert md.rstrip().splitlines()[-1].startswith("<sub>skyform ")


def test_formats_are_exclusive(cli, plan_file):
    result = cli("cost", plan_file, "--json", "--csv")
    assert result.exit_code == 1 and "exclusive" in result.stderr


def test_diff_of_two_plans(cli, plan_file, tmp_path):
    timed = tmp_path / "timed.json"
    cli("plan", EXAMPLES / "pipeline.yaml", "--minimize", "time", "-o", timed)
    result = cli("cost", "diff", plan_file, timed)
    assert result.exit_code == 0
    assert "~ train-pipeline-train (changed)" in result.stdout
    data = json.loads(cli("cost", "diff", plan_file, timed, "--json").stdout)
    assert [r["kind"] for r in data["reasons"]] == ["objective"]
    assert data["totals"]["estimated_after"] > data["totals"]["estimated_before"]
    md = cli("cost", "diff", plan_file, timed, "--markdown").stdout
    assert md.startswith("### skyform cost diff: `")


def test_reprice_against_a_catalog_directory(cli, plan_file, tmp_path):
    catalog = v8_catalog(tmp_path / "v8", dearer_g6_without_m7a)
    result = cli("cost", "reprice", plan_file, "--catalog", catalog)
    assert result.exit_code == 0, result.output
    assert "gone" in result.stdout
    assert "1 offer is no longer in this catalog: train-pipeline-eval" in result.stdout
    data = json.loads(cli("cost", "reprice", plan_file, "--catalog", catalog, "--json").stdout)
    rows = {c["cluster"]: c for c in data["clusters"]}
    assert rows["train-pipeline-train"]["new_hourly_price"] == 0.31
    assert rows["train-pipeline-eval"]["status"] == "missing"
    # against the catalog it was made with, nothing drifts
    same = json.loads(cli("cost", "reprice", plan_file, "--json").stdout)
    assert {c["status"] for c in same["clusters"]} == {"same"}


def test_reprice_catalog_must_be_a_directory(cli, plan_file, tmp_path):
    result = cli("cost", "reprice", plan_file, "--catalog", tmp_path / "nope")
    assert result.exit_code == 1 and "not a directory" in result.stderr


def test_cost_report_without_state(cli, skyform_home):
    result = cli("cost-report")
    assert result.exit_code == 0
    assert result.stdout.strip() == "No cluster usage recorded in the last 30 days."
    assert json.loads(cli("cost-report", "--json").stdout)["clusters"] == []
    assert not (skyform_home / "state.db").exists()  # reading cost creates no state
    assert cli("cost-report", "--json", "--csv").exit_code == 1


def test_help_lists_the_verbs_and_cost_imports_nothing_heavy(cli, plan_file):
    help_text = cli("--help").stdout
    assert "cost-report" in help_text and "cost " in help_text
    for args in (["cost", str(plan_file)], ["cost", "reprice", str(plan_file)], ["cost-report"]):
        assert not heavy_modules(modules_loaded_by(args))
