"""The use cases behind `cost` (estimate), `cost diff`, `cost reprice` and `cost-report`:
saved plans priced against a catalog, compared, and the recorded usage priced."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from skyform.errors import CatalogError
from skyform.ops import planfiles
from skyform.plan.model import Plan

if TYPE_CHECKING:
    from skyform.cost.model import PlanComparison, PlanCost, Reprice, UsageReport
    from skyform.plan.catalog import Catalog


def _catalog(directory: Path | None) -> Catalog:
    """The catalog in use, or the one in `--catalog DIR`."""
    from skyform.config import load_config
    from skyform.plan.catalog import load_catalog

    if directory is not None and not Path(directory).is_dir():
        raise CatalogError(f"--catalog {directory}: not a directory")
    return load_catalog(load_config(), source=directory)


def estimate(plan_file: Path, catalog_dir: Path | None) -> tuple[Plan, PlanCost]:
    """The saved plan and its cost (the catalog read only when the plan's prices need it)."""
    from skyform.cost.estimate import needs_catalog, plan_cost

    plan, _ = planfiles.read(plan_file)
    return plan, plan_cost(plan, _catalog(catalog_dir) if needs_catalog(plan) else None)


def diff(old_file: Path, new_file: Path) -> PlanComparison:
    from skyform.cost.compare import compare_plans

    old, _ = planfiles.read(old_file)
    new, _ = planfiles.read(new_file)
    return compare_plans(old, new, old_label=str(old_file), new_label=str(new_file))


def reprice(plan_file: Path, catalog_dir: Path | None) -> Reprice:
    from skyform.cost.reprice import reprice as reprice_plan

    plan, _ = planfiles.read(plan_file)
    return reprice_plan(plan, _catalog(catalog_dir))


def usage(days: float) -> UsageReport:
    """What applied clusters and managed jobs cost over the last `days` (0: all recorded)."""
    from skyform.cost.usage import usage_report
    from skyform.state.db import open_state, state_exists
    from skyform.state.managed import ManagedJobs

    now = time.time()
    since = now - days * 86400 if days else None
    intervals, live, names, statuses, recoveries = [], {}, {}, {}, {}
    if state_exists():
        with open_state() as db:
            records = _settle_autostops(db, db.list_clusters())
            intervals = db.usage(since=since)
            live = {r.name: r.status.value for r in records}
            for job in ManagedJobs(db).list():
                names[job.id], statuses[job.id] = job.name, job.status.value
                recoveries[job.id] = job.recoveries()
    return usage_report(
        intervals,
        now=now,
        since=since,
        cluster_status=live,
        job_names=names,
        job_status=statuses,
        job_recoveries=recoveries,
    )


def _settle_autostops(db, records: list) -> list:
    """What the autostop agents did, as plain `status` settles it (local clusters: reading
    the node directory costs nothing): a cluster its agent stopped is billed until then.
    The records as they are now (the store is read once: the cost page reads it often)."""
    if not any(r.spec.autostop is not None for r in records):
        return records
    from skyform.config import load_config
    from skyform.ops.autostop import converge_all

    kept, _notes = converge_all(db, load_config(), records, remote=False, emit=lambda _m: None)
    return kept
