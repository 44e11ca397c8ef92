"""What changed between two plans: what they were made from, where clusters go, what it costs.

`compare_plans` backs `skyform cost diff OLD NEW` (a review of two revisions, like
`infracost diff`) and `check_plan` backs `skyform plan TASK --check PLAN` (is the committed
plan exactly what planning writes now; if not, say why in words, not JSON lines).
"""

from __future__ import annotations

import difflib
import shlex

from skyform.cost.model import (
    ClusterDelta,
    ClusterSide,
    PlanCheck,
    PlanComparison,
    Reason,
    ReasonKind,
    Totals,
)
from skyform.plan.model import Plan
from skyform.plan.provenance import Difference, differences, of_plan
from skyform.spec.overrides import words

RAW_DIFF_LINES = 40


def _short(digest: str, n: int = 12) -> str:
    algo, _, hexpart = digest.partition(":")
    return f"{algo}:{hexpart[:n]}" if hexpart else digest[:n]


def _flags(plan: Plan) -> str:
    return shlex.join(words(plan.task.overrides)) or "none"


def _digest(kind: ReasonKind, what: str, d: Difference) -> Reason:
    message = f"{what} ({_short(d.before)} → {_short(d.after)})"
    return Reason(kind=kind, message=message, before=d.before, after=d.after)


def _moved_base(old: Plan, new: Plan) -> str:
    """Why the same task file reads differently: its relative paths start elsewhere (skyform
    ran in another directory), or the plan records them absolute (the previous format)."""
    before, after = old.base_dir() or "none", new.base_dir() or "none"
    if before == after:  # an absolute base: the previous format, made in this checkout
        return (
            f"the plan records the task's relative paths absolute (from {before}), as "
            "earlier skyform releases wrote plans; plans now record them relative to the plan "
            "file, so a clone at another path reads the same plan"
        )
    return (
        f"the task's relative paths start at another directory ({before} → {after}): they "
        "start where skyform runs, as `sky launch` resolves them; run it from the directory "
        "the plan was made in"
    )


def _reason(d: Difference, old: Plan, new: Plan) -> Reason:
    """One provenance difference (plan/provenance.py), in the words of a plan review."""
    a, b = old.prior, new.prior
    match d.kind:
        case "task_path":
            message = f"the task file path differs ({d.before} → {d.after})"
            return Reason(kind="task_path", message=message, before=d.before, after=d.after)
        case "task_file":
            return _digest("task_file", f"the task file {new.task.path} changed", d)
        case "relative_to":
            message = _moved_base(old, new)
            before, after = old.base_dir() or "none", new.base_dir() or "none"
            return Reason(kind="relative_to", message=message, before=before, after=after)
        case "task":
            what = "the task's inputs changed (--env/--env-file/--secret values or files it reads)"
            return _digest("task", what, d)
        case "catalog":
            what = "the price catalog changed (refreshed, or another skyform's bundle)"
            return _digest("catalog", what, d)
        case "onprem":
            return _digest("onprem", "the local/ssh pool settings in config.yaml changed", d)
        case "sources":
            message = f"the local sources uploaded into {d.before} changed"
            return Reason(kind="sources", message=message, before=d.before)
        case "lineage" | "state":
            if d.kind == "lineage":
                message = f"the state was recreated (lineage {d.before[:8]} → {d.after[:8]})"
            else:
                message = f"the state moved on (serial {a.serial} → {b.serial})"
            before, after = f"{a.lineage}:{a.serial}", f"{b.lineage}:{b.serial}"
            return Reason(kind="state", message=message, before=before, after=after)
        case "objective":
            message = f"the objective differs (--minimize {d.before} → {d.after})"
            return Reason(kind="objective", message=message, before=d.before, after=d.after)
        case "overrides":
            before, after = _flags(old), _flags(new)
            message = f"the resource flags differ ({before} → {after})"
            return Reason(kind="overrides", message=message, before=before, after=after)
        case "destroy":
            message = "one plan is a --destroy plan and the other is not"
            return Reason(kind="destroy", message=message, before=d.before, after=d.after)
        case "blocked" | "allowed":
            message = f"the {d.kind} placements differ ({d.count_before} → {d.count_after})"
            return Reason(kind="blocked" if d.kind == "blocked" else "allowed", message=message)
    message = f"made by another skyform ({d.before} → {d.after})"
    return Reason(kind="version", message=message, before=d.before, after=d.after)


def provenance_reasons(old: Plan, new: Plan) -> list[Reason]:
    """Differences in the inputs the two plans record: task, catalog, config, state, flags."""
    return [_reason(d, old, new) for d in differences(of_plan(old), of_plan(new))]


def _sides(plan: Plan) -> dict[str, ClusterSide]:
    """Every cluster the plan places or acts on, in plan order (placements, then the rest)."""
    sides: dict[str, ClusterSide] = {}
    for t in plan.tasks:
        change = plan.change_for(t.cluster)
        sides[t.cluster] = ClusterSide(
            action=change.action if change is not None else None,
            offer=t.offer,
            num_nodes=t.num_nodes,
            hourly_cost=t.hourly_cost,
            estimated_hours=t.estimated_hours,
            estimated_cost=t.estimated_cost,
        )
    for change in plan.changes:
        if change.cluster not in sides:
            sides[change.cluster] = ClusterSide(action=change.action)
    return sides


def _where(side: ClusterSide) -> tuple | None:
    o = side.offer
    return None if o is None else (o.infra, o.context, o.instance_type, o.spot)


def _moved(before: ClusterSide, after: ClusterSide) -> bool:
    return _where(before) != _where(after)


def _notes(before: ClusterSide, after: ClusterSide) -> list[str]:
    notes = []
    if before.action != after.action:
        a = before.action.value if before.action else "none"
        b = after.action.value if after.action else "none"
        notes.append(f"action {a} → {b}")
    old, new = before.offer, after.offer
    if old and new and not _moved(before, after) and old.hourly_price != new.hourly_price:
        notes.append(f"price per node ${old.hourly_price:g}/h → ${new.hourly_price:g}/h")
    if before.num_nodes != after.num_nodes:
        notes.append(f"nodes {before.num_nodes} → {after.num_nodes}")
    if before.estimated_hours != after.estimated_hours:
        notes.append(f"estimated hours {before.estimated_hours:g} → {after.estimated_hours:g}")
    return notes


def _delta(name: str, before: ClusterSide | None, after: ClusterSide | None) -> ClusterDelta:
    if before is None:
        return ClusterDelta(cluster=name, kind="added", after=after)
    if after is None:
        return ClusterDelta(cluster=name, kind="removed", before=before)
    return ClusterDelta(
        cluster=name,
        kind="changed" if before != after else "unchanged",
        before=before,
        after=after,
        moved=_moved(before, after),
        notes=_notes(before, after),
    )


def compare_plans(
    old: Plan, new: Plan, *, old_label: str = "old", new_label: str = "new"
) -> PlanComparison:
    before, after = _sides(old), _sides(new)
    names = list(after) + [n for n in before if n not in after]
    return PlanComparison(
        old_label=old_label,
        new_label=new_label,
        reasons=provenance_reasons(old, new),
        clusters=[_delta(n, before.get(n), after.get(n)) for n in names],
        blocked=list(new.blocked),
        newly_blocked=[b for b in new.blocked if b not in old.blocked],
        allowed=list(new.allowed),
        totals=Totals(
            hourly_before=old.summary.hourly_after,
            hourly_after=new.summary.hourly_after,
            estimated_before=old.summary.estimated_cost,
            estimated_after=new.summary.estimated_cost,
            egress_before=old.summary.egress_cost,
            egress_after=new.summary.egress_cost,
        ),
    )


def check_plan(
    committed: Plan, committed_bytes: bytes, fresh: Plan, fresh_bytes: bytes, *, label: str
) -> PlanCheck:
    """Compare a committed plan file with the bytes planning writes now."""
    comparison = compare_plans(committed, fresh, old_label=label, new_label="planning now")
    if committed_bytes == fresh_bytes:
        return PlanCheck(up_to_date=True, comparison=comparison)
    explained = comparison.reasons or comparison.changed_clusters or comparison.totals_changed
    raw: list[str] = []
    if not explained:
        lines = difflib.unified_diff(
            committed_bytes.decode("utf-8", "replace").splitlines(),
            fresh_bytes.decode("utf-8", "replace").splitlines(),
            fromfile=label,
            tofile="planning now",
            lineterm="",
            n=1,
        )
        raw = list(lines)[:RAW_DIFF_LINES]
    return PlanCheck(up_to_date=False, comparison=comparison, raw_diff=raw)
