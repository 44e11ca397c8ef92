"""`skyform export PLAN.json -o DIR`: each cloud cluster of a saved plan as a Pulumi project."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from skyform.config import load_config
from skyform.ops import planfiles

if TYPE_CHECKING:
    from skyform.stacks.pulumi.export import ExportResult


def export(plan_file: Path, out: Path) -> ExportResult:
    """Write the projects (all or none: every cluster is rendered before anything is written)."""
    # Imported here: nothing outside stacks/pulumi loads the Pulumi engine package at import time
    # (the layering test), so `skyform --help` and the other verbs stay fast.
    from skyform.stacks.pulumi.export import export_plan

    plan, _ = planfiles.read(plan_file)
    return export_plan(plan, planfiles.digest_of(plan), out, config=load_config())
