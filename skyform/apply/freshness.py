"""Is a saved plan still the plan? Terraform refuses a stale plan; so does skyform.

A plan is stale when the state moved on (lineage or serial), the task file changed, or the
catalog / on-prem config it was priced from changed. The error lists every reason found.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from skyform.errors import SpecError, StalePlanError
from skyform.plan.model import Action, KubernetesProvenance, Plan
from skyform.state.db import StateDB


def task_file_of(plan: Plan, plan_path: Path) -> Path:
    """The task file a plan names (its path is relative to the plan file's directory)."""
    recorded = Path(plan.task.path)
    return recorded if recorded.is_absolute() else Path(plan_path).resolve().parent / recorded


def _file_digest(path: Path) -> str | None:
    try:
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _state_reasons(plan: Plan, db: StateDB) -> list[str]:
    prior = plan.prior
    if prior.lineage is None:
        if db.serial != 0:
            return [
                f"the plan was made against an empty state; state is now at serial "
                f"{db.serial}{_changes_since(db, 0)}"
            ]
        return []
    if prior.lineage != db.lineage:
        return [f"the state was recreated (lineage {prior.lineage[:8]} → {db.lineage[:8]})"]
    if prior.serial != db.serial:
        return [
            f"the state changed since the plan was made (serial {prior.serial} → "
            f"{db.serial}){_changes_since(db, prior.serial)}"
        ]
    return []


def _changes_since(db: StateDB, serial: int) -> str:
    """`: hello (destroyed), train (up)` — each changed cluster with its latest change."""
    latest: dict[str, str] = {}
    for e in db.events():
        if e.kind.startswith("cluster.") and e.cluster and int(e.data.get("serial", 0)) > serial:
            latest.pop(e.cluster, None)  # re-insert so the order follows the latest change
            latest[e.cluster] = e.kind.removeprefix("cluster.")
    if not latest:
        return ""
    return ": " + ", ".join(f"{name} ({kind})" for name, kind in list(latest.items())[-6:])


def stale_reasons(plan: Plan, plan_path: Path, *, db: StateDB, catalog) -> list[str]:
    reasons = _state_reasons(plan, db)
    task_file = task_file_of(plan, plan_path)
    digest = _file_digest(task_file)
    if digest is None:
        reasons.append(f"the task file {task_file} is gone")
    elif digest != plan.task.file_digest:
        reasons.append(f"the task file {task_file} changed since the plan was made")
    if not plan.destroy:
        if "sha256:" + catalog.digest != plan.catalog_digest:
            reasons.append(
                "the price catalog changed (refreshed or upgraded) since the plan was made"
            )
        if "sha256:" + catalog.onprem_digest_for(plan.onprem_scope) != plan.onprem_digest:
            reasons.append(
                "the local/ssh pool settings in config.yaml changed since the plan was made"
            )
        if plan.kubernetes is not None:
            reasons += kubernetes_reasons(plan.kubernetes, catalog)
        if plan.buckets:
            reasons += bucket_reasons(plan, db)
    return reasons


def bucket_reasons(plan: Plan, db: StateDB) -> list[str]:
    """A bucket the plan read is gone, or one it would create now exists and is not skyform's
    (someone else's data: skyform would write into it and, at down, delete it)."""
    from skyform.config import load_config
    from skyform.errors import StorageError
    from skyform.state.buckets import get_bucket
    from skyform.storage.client import client_for

    settings = load_config().storage
    reasons = []
    for bucket in plan.buckets:
        if bucket.note:  # not read at plan time: nothing to compare with
            continue
        try:
            now = client_for(bucket.store, settings).read(bucket.name)
        except StorageError as exc:
            reasons.append(f"bucket {bucket.uri} cannot be read now: {exc.message}")
            continue
        if bucket.action is Action.NOOP and now.exists is False:
            reasons.append(f"bucket {bucket.uri} existed when the plan was made and is gone")
        elif bucket.action is Action.CREATE and now.exists and not get_bucket(db, bucket.uri):
            reasons.append(f"bucket {bucket.uri} now exists and skyform did not create it")
    return reasons


def kubernetes_reasons(recorded: KubernetesProvenance, catalog) -> list[str]:
    """What changed in the Kubernetes contexts the plan rests on (read again from the API)."""
    now = catalog.kubernetes.snapshot(recorded.scope, refresh=True)
    if "sha256:" + now.digest == recorded.digest:
        return []
    before = {c.name: c for c in recorded.contexts}
    after = {c.context: c for c in now.contexts}
    changes = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if new is None and old is not None:
            changes.append(f"context {name} is no longer planned on (it had {old.nodes})")
        elif new is not None and old is None:
            changes.append(f"context {name} is now planned on ({new.summary()})")
        elif new is not None and old is not None and "sha256:" + new.digest() != old.digest:
            changes.append(f"context {name} had {old.nodes}; now {new.summary()}")
    detail = "; ".join(changes) or "the contexts changed"
    return [f"the Kubernetes capacity changed since the plan was made: {detail}"]


def _for_shell(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def check_fresh(plan: Plan, plan_path: Path, *, db: StateDB, catalog) -> None:
    reasons = stale_reasons(plan, plan_path, db=db, catalog=catalog)
    if reasons:
        task = _for_shell(task_file_of(plan, plan_path))
        destroy = " --destroy" if plan.destroy else ""
        raise StalePlanError(
            f"plan {plan_path} is stale: " + "; ".join(reasons),
            f"Make a new plan and review it: skyform plan{destroy} {task} -o "
            f"{_for_shell(Path(plan_path))}",
        )


def task_must_exist(plan: Plan, plan_path: Path) -> Path:
    path = task_file_of(plan, plan_path)
    if not path.is_file():
        raise SpecError(f"the plan's task file {path} does not exist", path=str(path))
    return path
