"""Is a saved plan still the plan? Terraform refuses a stale plan; so does skyform.

A plan is stale when a cluster it acts on changed after the plan was made (or the state was
recreated), the task file changed or is gone, or the catalog / on-prem config it was priced
from changed. The error lists every reason found. Changes to other clusters do not count:
five plans for five clusters made from one state all apply, in any order, at once.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path

from skyform.digests import sha256
from skyform.errors import PlanFileError, StalePlanError
from skyform.plan.model import Action, KubernetesProvenance, Plan
from skyform.plan.provenance import Difference, Provenance, differences, of_plan, touched_clusters
from skyform.plan.replan import replan_command, shell_path
from skyform.state.db import StateDB


def task_file_of(plan: Plan, plan_path: Path) -> Path:
    """The task file a plan names (its path is relative to the plan file's directory)."""
    recorded = Path(plan.task.path)
    return recorded if recorded.is_absolute() else Path(plan_path).resolve().parent / recorded


def paths_start(plan: Plan, plan_path: Path) -> Path:
    """Where the plan's relative local paths (workdir, file mount sources, bucket uploads)
    start: its base, recorded relative to the plan file's directory (absolute in a plan of
    the previous format); the task file's folder for a plan that records none."""
    recorded = plan.task.relative_to
    if recorded is None:
        return task_file_of(plan, plan_path).parent
    return Path(os.path.normpath(Path(plan_path).resolve().parent / recorded))


def check_paths_start(plan: Plan, plan_path: Path) -> Path:
    """paths_start, refused with the plan file and field named when it is no directory here
    (a plan copied without the checkout it was made in)."""
    base = paths_start(plan, plan_path)
    if plan.task.relative_to is not None and not base.is_dir():
        raise PlanFileError(
            f"{plan_path}: task.relative_to: {plan.task.relative_to!r} names {base}, where the "
            "task's relative paths start, and it is not a directory here",
            "Keep the plan file where it was saved in the checkout (it records that directory "
            f"relative to itself), or make a new plan here: "
            f"{replan_command(plan, plan_path, task_file_of(plan, plan_path))}",
        )
    return base


def read_task_file(plan: Plan, plan_path: Path) -> bytes | None:
    """The bytes of the task file a plan names, read once through the bounded reader and
    only from a regular file; None when it is gone (the plan is stale). The path is the
    plan's, so untrusted: a FIFO, a device, a file too large or unreadable is a SpecError
    naming it (exit 1), at once — never a hang or a read until memory runs out."""
    from skyform.spec.loader import read_task_bytes

    path = task_file_of(plan, plan_path)
    if not path.exists():
        return None
    return read_task_bytes(path, regular_only=True)


def _changed_clusters(plan: Plan, db: StateDB) -> tuple[tuple[str, str], ...]:
    """The clusters the plan acts on that changed after its serial, with their latest
    recorded change (`up`, `destroyed` ...)."""
    serial = plan.prior.serial
    changed = [name for name in touched_clusters(plan) if db.cluster_version(name) > serial]
    kinds = _latest_changes(db, serial, changed)
    return tuple((name, kinds.get(name, "changed")) for name in changed)


def _latest_changes(db: StateDB, serial: int, names: list[str]) -> dict[str, str]:
    """{cluster: its latest recorded change after `serial`} — `up`, `destroyed` ..."""
    latest: dict[str, str] = {}
    for name in names:
        for e in db.events(cluster=name):
            if e.kind.startswith("cluster.") and int(e.data.get("serial", 0)) > serial:
                latest[name] = e.kind.removeprefix("cluster.")
    return latest


def world_now(
    plan: Plan, task_data: bytes | None, *, db: StateDB | None, catalog, task_dir: Path
) -> Provenance:
    """What the plan's inputs are now: the task file, the catalog and on-prem config it was
    priced from (not for a destroy plan: it prices nothing), the state it acts on, the local
    sources it uploads into buckets. `db` None: there is no state yet (nothing can have
    changed since any plan)."""
    priced = not plan.destroy
    return Provenance(
        task_file="" if task_data is None else sha256(task_data),
        catalog="sha256:" + catalog.digest if priced else None,
        onprem="sha256:" + catalog.onprem_digest_for(plan.onprem_scope) if priced else None,
        lineage=db.lineage if db is not None else None,
        changed=_changed_clusters(plan, db) if db is not None else (),
        sources=_sources_now(plan, task_dir),
    )


def _sources_now(plan: Plan, task_dir: Path) -> tuple[tuple[str, str], ...]:
    """The digest of each bucket's local sources now, for the buckets the plan recorded one of."""
    from skyform.plan.buckets import sources_digest
    from skyform.storage.sources import source_digests

    found = []
    for bucket in plan.buckets:
        if bucket.source_digest is not None:
            now = sources_digest(bucket.uploads, source_digests(bucket.uploads, task_dir))
            found.append((bucket.uri, now or ""))
    return tuple(sorted(found))


def _words(d: Difference, plan: Plan, task_file: Path, db: StateDB | None) -> str:
    """One provenance difference (plan/provenance.py), in the words of a refused apply."""
    if d.kind == "task_file":
        what = "is gone" if not d.after else "changed since the plan was made"
        return f"the task file {task_file} {what}"
    if d.kind == "catalog":
        return "the price catalog changed (refreshed or upgraded) since the plan was made"
    if d.kind == "onprem":
        return "the local/ssh pool settings in config.yaml changed since the plan was made"
    if d.kind == "lineage":
        return f"the state was recreated (lineage {d.before[:8]} → {d.after[:8]})"
    if d.kind == "sources":
        uploads = {b.uri: ", ".join(plan.shown_path(s) for s in b.uploads) for b in plan.buckets}
        return "; ".join(
            f"{uploads.get(uri, 'the local sources')} (uploaded into {uri}) changed since the "
            "plan was made"
            for uri in d.before.split(", ")
        )
    assert d.kind == "clusters" and db is not None, d.kind
    prior = plan.prior
    against = "an empty state" if prior.lineage is None else f"state serial {prior.serial}"
    plural = "s" if d.count_after > 1 else ""
    names = [name for name, _ in _changed_clusters(plan, db)]
    who = [f"{name} was changed {c.describe()}" for name in names if (c := db.cluster_change(name))]
    return (
        f"cluster{plural} {d.after} changed since the plan was made "
        f"(against {against}; now serial {db.serial})" + (": " + "; ".join(who) if who else "")
    )


def stale_reasons(
    plan: Plan, plan_path: Path, task_data: bytes | None, *, db: StateDB | None, catalog
) -> list[str]:
    """Why the plan is stale (empty: it is fresh); `task_data`: its task file's bytes now."""
    task_file = task_file_of(plan, plan_path)
    now = world_now(plan, task_data, db=db, catalog=catalog, task_dir=paths_start(plan, plan_path))
    found = differences(of_plan(plan), now)
    # the state first, as before: it is the usual reason (another apply landed)
    found.sort(key=lambda d: d.kind not in ("lineage", "clusters"))
    reasons = [_words(d, plan, task_file, db) for d in found]
    if not plan.destroy:
        if plan.kubernetes is not None:
            reasons += kubernetes_reasons(plan.kubernetes, catalog)
        if plan.buckets:
            reasons += bucket_reasons(plan, db)
    return reasons


def bucket_reasons(plan: Plan, db: StateDB | None) -> list[str]:
    """A bucket the plan read is gone, or one it would create now exists and is not skyform's
    (someone else's data: skyform would write into it and, at down, delete it)."""
    from skyform.config import load_config
    from skyform.errors import StorageError
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
        elif bucket.action is Action.CREATE and now.exists and not _ours(db, bucket.uri):
            reasons.append(f"bucket {bucket.uri} now exists and skyform did not create it")
    return reasons


def _ours(db: StateDB | None, uri: str) -> bool:
    """skyform created the bucket (no state yet: it created none)."""
    from skyform.state.buckets import get_bucket

    return db is not None and get_bucket(db, uri) is not None


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


def check_fresh(plan: Plan, plan_path: Path, *, db: StateDB | None, catalog) -> bytes:
    """Refuse a stale plan; the task file's bytes, read once, as they were checked (what
    apply then reads the secrets from)."""
    data = read_task_file(plan, plan_path)
    reasons = stale_reasons(plan, plan_path, data, db=db, catalog=catalog)
    if reasons or data is None:
        again = replan_command(plan, Path(plan_path), task_file_of(plan, plan_path))
        raise StalePlanError(
            f"plan {plan_path} is stale: " + "; ".join(reasons),
            f"Make a new plan and review it: {again}",
        )
    return data


def task_must_exist(plan: Plan, plan_path: Path) -> Path:
    """A plan whose task file is gone is stale (exit 3): the task moved on without it. One
    that is there but no regular file (or too large) is refused as read_task_file says."""
    path = task_file_of(plan, plan_path)
    if read_task_file(plan, plan_path) is None:
        raise StalePlanError(
            f"plan {plan_path} is stale: its task file {path} is gone",
            "Restore the task file, or plan its new location: skyform plan TASK.yaml -o "
            f"{shlex.quote(shell_path(Path(plan_path)))}",
        )
    return path


def revision_stale_reasons(
    plan: Plan, clusters: Iterable[str], *, db: StateDB, acting_for: str
) -> list[str]:
    """Why a managed job's plan revision is stale for the clusters an attempt acts on.

    The per-revision rule: a cluster changed after the revision was made is stale unless the
    change was the job's own (`acting_for`, what its controller's changes are recorded as —
    a recovery tears down and relaunches its clusters after planning around them). Another
    apply or `down` of that cluster, or a recreated state, makes the revision stale."""
    prior = plan.prior
    if prior.lineage is not None and prior.lineage != db.lineage:
        return [f"the state was recreated (lineage {prior.lineage[:8]} → {db.lineage[:8]})"]
    reasons = []
    for name in clusters:
        if db.cluster_version(name) <= prior.serial:
            continue
        change = db.cluster_change(name)
        if change is not None and change.command == acting_for:
            continue
        who = change.describe() if change is not None else "by another skyform"
        reasons.append(f"cluster {name} was changed {who} after the revision was made")
    return reasons
