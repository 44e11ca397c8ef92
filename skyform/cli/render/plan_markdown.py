"""A plan as a pull-request comment (GitHub-flavoured markdown). Pure: Plan -> str."""

from __future__ import annotations

from skyform.cli.render import fmt
from skyform.cli.render.plan_kubernetes import kubernetes_lines
from skyform.plan.model import Action, Plan, TaskPlacement

ICON = {
    Action.CREATE: "➕",
    Action.UPDATE: "🔄",
    Action.REPLACE: "♻️",
    Action.DELETE: "➖",
    Action.NOOP: "✔️",
}


def cell(text: object) -> str:
    """Table-cell safe text: pipes escaped, newlines flattened."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _considered(t: TaskPlacement) -> list[str]:
    lines = [
        "<details><summary>Considered resources for <code>"
        f"{cell(t.cluster)}</code> ({fmt.nodes(t.num_nodes)}, asked: {cell(t.request)})</summary>",
        "",
        "| Infra | Instance | vCPUs | Mem (GB) | GPUs | $/h | Est. $ | Chosen |",
        "|---|---|--:|--:|---|--:|--:|:-:|",
    ]
    for alt in t.alternatives:
        o = alt.offer
        lines.append(
            f"| {cell(o.infra)} | {cell(fmt.instance(o))} | {fmt.number(o.vcpus)} | "
            f"{fmt.number(o.memory_gib)} | {cell(fmt.gpus(o))} | {alt.hourly_cost:.4f} | "
            f"{alt.estimated_cost:.2f} | {'✔' if alt.chosen else ''} |"
        )
    lines += ["", "</details>", ""]
    return lines


def render_plan_markdown(plan: Plan, *, title: str | None = None) -> str:
    s = plan.summary
    head = title or f"skyform plan for `{plan.task.path}`"
    lines = [f"### {head}", ""]
    if s.has_changes:
        lines.append(f"**Plan: {s.add} to add, {s.change} to change, {s.destroy} to destroy.**")
    else:
        lines.append("**No changes.** The clusters match the task file.")
    if not plan.destroy:
        lines.append(
            f"Estimated cost **{fmt.usd(s.estimated_cost)}** over {fmt.hours(s.estimated_hours)}"
            f" · hourly {fmt.usd(s.hourly_before, hourly=True)} → "
            f"{fmt.usd(s.hourly_after, hourly=True)}"
            + (f" · egress {fmt.usd(s.egress_cost)}" if s.egress_cost else "")
            + f" · objective: {plan.objective}"
        )
    if plan.task.overrides:
        lines.append(f"Planned with resource flags: `{cell(fmt.flags(plan))}`")
    lines += [
        "",
        "| | Cluster | Action | Infra | Instance | Nodes | GPUs | $/h | Est. cost | Why |",
        "|---|---|---|---|---|--:|---|--:|--:|---|",
    ]
    for change in plan.changes:
        spec = change.after or change.before
        placement = plan.placement_for(change.cluster)
        if spec is None:
            continue
        o = spec.offer
        est = fmt.usd(placement.estimated_cost) if placement and not plan.destroy else "-"
        lines.append(
            f"| {ICON[change.action]} | `{cell(change.cluster)}` | {change.action.value} | "
            f"{cell(o.infra)} | {cell(fmt.instance(o))} | {spec.num_nodes} | "
            f"{cell(fmt.gpus(o))} | {spec.hourly_cost:.4f} | {est} | {cell(change.reason)} |"
        )
    lines.append("")
    changed = [c for c in plan.changes if c.attributes and c.action is not Action.NOOP]
    for change in changed:
        lines += [
            f"<details><summary>Changes to <code>{cell(change.cluster)}</code></summary>",
            "",
            "| Attribute | Before | After | |",
            "|---|---|---|---|",
        ]
        for a in change.attributes:
            note = "forces replacement" if a.forces_replacement else ""
            lines.append(
                f"| {cell(a.path)} | {cell(a.before or '-')} | {cell(a.after or '-')} | {note} |"
            )
        lines += ["", "</details>", ""]
    if not plan.destroy:
        for t in plan.tasks:
            if t.alternatives:
                lines += _considered(t)
    if plan.egress:
        lines += ["| Egress | Data | Route | Cost | Time |", "|---|--:|---|--:|--:|"]
        for f in plan.egress:
            lines.append(
                f"| {cell(f.src_task)} → {cell(f.dst_task)} | {f.gigabytes:g} GB | "
                f"{cell(f.src_infra)} → {cell(f.dst_infra)} | {fmt.usd(f.cost)} | "
                f"{f.seconds:g} s |"
            )
        lines.append("")
    if plan.blocked:
        lines.append(
            "Blocked placements: "
            + "; ".join(
                f"{cell(b.describe())}" + (f" ({cell(b.reason)})" if b.reason else "")
                for b in plan.blocked
            )
        )
        lines.append("")
    k8s_lines = kubernetes_lines(plan)
    lines += [f"- {cell(line)}" for line in k8s_lines] + ([""] if k8s_lines else [])
    lines.append(
        f"<sub>skyform {plan.skyform_version} · task {fmt.short_digest(plan.task.digest)} · "
        f"catalog {fmt.short_digest(plan.catalog_digest)} · state serial {plan.prior.serial}"
        "</sub>"
    )
    return "\n".join(lines) + "\n"
