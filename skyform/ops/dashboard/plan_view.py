"""A plan as the dashboard draws it: Terraform-style blocks from the plan JSON's changes
(the attribute changes skyform/plan/diff.py computed when the plan was made), pure."""

from __future__ import annotations

from dataclasses import dataclass, field

from skyform.plan.model import ClusterChange, ClusterSpec, Plan
from skyform.plan.parts import Action


@dataclass(frozen=True)
class DiffLine:
    sign: str  # + - ~
    key: str
    before: str | None
    after: str | None
    note: str = ""


@dataclass(frozen=True)
class ChangeBlock:
    symbol: str
    action: str
    cluster: str
    reason: str
    lines: list[DiffLine] = field(default_factory=list)


@dataclass(frozen=True)
class PlanDiffView:
    task: str
    summary: str
    hourly_before: float
    hourly_after: float
    estimated_cost: float
    blocks: list[ChangeBlock]
    untouched: list[tuple[str, str]]


def _spec_pairs(spec: ClusterSpec) -> list[tuple[str, str]]:
    offer = spec.offer
    pairs = [
        ("infra", offer.infra),
        ("instance_type", offer.instance_type),
        ("spot", "true" if offer.spot else "false"),
        ("nodes", str(spec.num_nodes)),
    ]
    if offer.accelerator:
        pairs.append(("accelerators", f"{offer.accelerator}:{offer.accelerator_count:g}"))
    if offer.vcpus is not None:
        pairs.append(("vcpus", f"{offer.vcpus:g}"))
    if offer.memory_gib is not None:
        pairs.append(("memory_gb", f"{offer.memory_gib:g}"))
    if spec.ports:
        pairs.append(("ports", ", ".join(spec.ports)))
    if spec.autostop:
        pairs.append(("autostop", spec.autostop.text))
    pairs.append(("hourly_cost", f"${spec.hourly_cost:.4g}/h"))
    return pairs


def _block(change: ClusterChange) -> ChangeBlock:
    action = change.action
    lines: list[DiffLine] = []
    whole = change.after if action is Action.CREATE else change.before
    if action in (Action.CREATE, Action.DELETE) and whole is not None:
        sign = "+" if action is Action.CREATE else "-"
        for key, value in _spec_pairs(whole):
            lines.append(DiffLine(sign, key, None if sign == "+" else value, value))
    else:
        for attr in change.attributes:
            note = "forces replacement" if attr.forces_replacement else ""
            lines.append(DiffLine("~", attr.path, attr.before, attr.after, note))
    return ChangeBlock(action.symbol, action.value, change.cluster, change.reason, lines)


def plan_view(plan: Plan) -> PlanDiffView:
    s = plan.summary
    summary = f"{s.add} to add, {s.change} to change, {s.destroy} to destroy"
    return PlanDiffView(
        task=plan.task.name or plan.task.path,
        summary=summary,
        hourly_before=s.hourly_before,
        hourly_after=s.hourly_after,
        estimated_cost=s.estimated_cost,
        blocks=[_block(c) for c in plan.changes if c.action is not Action.NOOP],
        untouched=[(u.cluster, u.reason) for u in plan.untouched],
    )
