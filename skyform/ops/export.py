"""`skyform export PLAN.json -o DIR`: each cloud cluster of a saved plan as a Pulumi project."""

from __future__ import annotations

from pathlib import Path

from skyform.config import load_config
from skyform.ops import planfiles
from skyform.stacks.pulumi.export import ExportResult, export_plan


def export(plan_file: Path, out: Path) -> ExportResult:
    """Write the projects (all or none: every cluster is rendered before anything is written)."""
    plan, data = planfiles.read(plan_file)
    return export_plan(plan, planfiles.digest_of(data), out, config=load_config())
