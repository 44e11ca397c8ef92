"""Helpers for cost tests (importable as `costkit`): plans made on the fixture catalog."""

from __future__ import annotations

import gzip
from pathlib import Path

from skyform.config import Config
from skyform.plan.catalog import BUNDLED_DIR, Catalog, load_fixture_catalog
from skyform.plan.model import BlockedPlacement, Plan, Prior
from skyform.plan.planner import PlanInputs, make_plan
from skyform.spec import load_task_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE_CLOUDS = ["cloud-a", "cloud-b"]


def tiny_catalog(csv_path: Path) -> Catalog:
    return load_fixture_catalog(csv_path, FIXTURES / "fixtures_tiny_egress.csv")


def edited_fixture(directory: Path, edit) -> Path:
    """A copy of fixtures_tiny.csv with `edit(text) -> text` applied."""
    text = (FIXTURES / "fixtures_tiny.csv").read_text()
    path = directory / "fixtures_edited.csv"
    edited = edit(text)
    assert edited != text, "the edit changed nothing"
    path.write_text(edited)
    return path


def fixture_plan(
    catalog: Catalog,
    text: str,
    *,
    inputs_at: dict[int, str] | None = None,
    path: str = "train.yaml",
    objective: str = "cost",
    prior: Prior | None = None,
    blocked: tuple[BlockedPlacement, ...] = (),
) -> Plan:
    """A plan made by the real planner on `catalog` from task YAML `text`.

    Task YAML cannot name the fictional fixture clouds as an inputs location, so `inputs_at`
    sets it per task index (as the optimizer tests do)."""
    dag = load_task_text(text, path_label=path)
    if inputs_at:
        tasks = list(dag.tasks)
        for index, location in inputs_at.items():
            ext = tasks[index].skyform.model_copy(update={"inputs_location": location})
            tasks[index] = tasks[index].model_copy(update={"skyform": ext})
        dag = dag.model_copy(update={"tasks": tasks})
    inputs = PlanInputs(
        dag=dag,
        task_path=path,
        file_digest="sha256:" + "f" * 64,
        objective=objective,  # type: ignore[arg-type]
        blocked=blocked,
    )
    config = Config.model_validate({"plan": {"clouds": FIXTURE_CLOUDS}})
    return make_plan(inputs, catalog=catalog, config=config, current={}, prior=prior or Prior())


# Three independent tasks whose figures are worked out by hand in test_estimate_fixture.py.
THREE_TASKS = """\
name: study
execution: parallel
---
name: train
resources: {accelerators: GPU-X:1, use_spot: true}
inputs: {'s3://bucket/data': 100}
skyform: {estimated_hours: 10}
run: x
---
name: render
resources: {accelerators: GPU-Y:4, use_spot: true}
inputs: {'s3://bucket/frames': 100}
skyform: {estimated_hours: 10}
run: x
---
name: report
num_nodes: 2
resources: {cpus: 8+}
skyform: {estimated_hours: 5}
run: x
"""
INPUTS_AT = {0: "cloud-a/a-east", 1: "cloud-a/a-east"}


def three_task_plan(catalog: Catalog, **kw) -> Plan:
    return fixture_plan(catalog, THREE_TASKS, inputs_at=INPUTS_AT, **kw)


def bundled_text(name: str) -> str:
    """A bundled table's CSV text (e.g. `aws_vms.csv`)."""
    return gzip.decompress((BUNDLED_DIR / f"{name}.gz").read_bytes()).decode()


def v8_catalog(directory: Path, edit_aws=lambda text: text) -> Path:
    """A catalog directory in SkyPilot's v8 layout (what `catalog refresh` downloads) made from
    the bundled tables, with `edit_aws(text) -> text` applied to aws/vms.csv."""
    files = {
        "aws/vms.csv": edit_aws(bundled_text("aws_vms.csv")),
        "gcp/vms.csv": bundled_text("gcp_vms.csv"),
        "common/accelerators.csv": bundled_text("accelerators.csv"),
    }
    for name, text in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)
    return directory


# Rows of the bundled AWS table that examples/pipeline.yaml is placed on (us-east-2, use2-az2).
G6_SPOT = ",0.8048,0.259900,us-east-2,use2-az2,"
M7A_ROW = "m7a.xlarge,,,4.0,16.0,,0.23184,0.099000,us-east-2,use2-az2,x86_64\n"


def dearer_g6_without_m7a(text: str) -> str:
    """g6.xlarge spot in use2-az2 0.2599 → 0.3100, and m7a.xlarge in use2-az2 gone."""
    assert G6_SPOT in text and M7A_ROW in text
    return text.replace(G6_SPOT, ",0.8048,0.310000,us-east-2,use2-az2,").replace(M7A_ROW, "")
