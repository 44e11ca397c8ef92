"""A plan as a pull-request comment (GitHub-flavoured markdown). Pure: Plan -> str."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyform.cli.render import fmt
from skyform.cli.render.plan_job import job_markdown
from skyform.cli.render.plan_kubernetes import kubernetes_lines
from skyform.cli.render.plan_notes import change_notes, egress_cost, probe_line, why_chosen
from skyform.cli.render.textdiff import TEXT_ATTRS, fenced_diff
from skyform.cli.render.visible import visible
from skyform.plan.containers import PREFIX as CONTAINER
from skyform.plan.parts import Action
from skyform.plan.planjson import content_digest

if TYPE_CHECKING:  # the models, or the strict reader's views of them (plan/planview.py)
    from collections.abc import Sequence

    from skyform.plan.model import ClusterChange, Plan, TaskPlacement

ICON = {
    Action.CREATE: "➕",
    Action.UPDATE: "🔄",
    Action.REPLACE: "♻️",
    Action.DELETE: "➖",
    Action.NOOP: "✔️",
}


def cell(text: object) -> str:
    """Table-cell safe text: pipes escaped, newlines flattened, and `<` `>` as entities, so
    text from a plan cannot open HTML (`<!--` would hide the rest of a PR comment from its
    reviewer). Control characters: the whole comment goes through render/visible.py."""
    return (
        str(text).replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")
    )


def _considered(t: TaskPlacement, objective: str) -> list[str]:
    with_egress = any(alt.egress_cost for alt in t.alternatives)
    extra = " Egress $ | Total $ |" if with_egress else ""
    lines = [
        "<details><summary>Considered resources for <code>"
        f"{cell(t.cluster)}</code> ({fmt.nodes(t.num_nodes)}, asked: {cell(t.request)})</summary>",
        "",
        f"| Infra | Instance | Arch | vCPUs | Mem (GB) | GPUs | $/h | Est. $ |{extra} Chosen |",
        "|---|---|---|--:|--:|---|--:|--:|" + ("--:|--:|" if with_egress else "") + ":-:|",
    ]
    for alt in t.alternatives:
        o = alt.offer
        egress = (
            f" {alt.egress_cost:.2f} | {alt.estimated_cost + alt.egress_cost:.2f} |"
            if with_egress
            else ""
        )
        lines.append(
            f"| {cell(o.infra)} | {cell(fmt.instance(o))} | {cell(o.arch)} | "
            f"{fmt.number(o.vcpus)} | {fmt.number(o.memory_gib)} | {cell(fmt.gpus(o))} | "
            f"{alt.hourly_cost:.4f} | {alt.estimated_cost:.2f} |{egress} "
            f"{'✔' if alt.chosen else ''} |"
        )
    why = why_chosen(t, objective)
    lines += ["", *([cell(why), ""] if why else []), "</details>", ""]
    return lines


def _attribute_details(change: ClusterChange) -> list[str]:
    lines = [
        f"<details><summary>Changes to <code>{cell(change.cluster)}</code></summary>",
        "",
        "| Attribute | Before | After | |",
        "|---|---|---|---|",
    ]
    texts = []
    for a in change.attributes:
        note = "forces replacement" if a.forces_replacement else ""
        if a.path in TEXT_ATTRS:
            texts.append(a)
            lines.append(f"| {cell(a.path)} | (below) | (below) | {note} |")
            continue
        lines.append(
            f"| {cell(a.path)} | {cell(a.before or '-')} | {cell(a.after or '-')} | {note} |"
        )
    lines.append("")
    for a in texts:
        lines += [f"`{a.path}`:", "", *fenced_diff(a.before, a.after), ""]
    return [*lines, "</details>", ""]


def render_plan_markdown(
    plan: Plan, *, title: str | None = None, sections: Sequence[str] = ()
) -> str:
    """`sections`: markdown lines shown before the digest (`plan --preview`'s section)."""
    s = plan.summary
    head = title or f"skyform plan for `{cell(plan.task.path)}`"
    lines = [f"### {head}", ""]
    if s.has_changes:
        buckets = f" {s.buckets_text()}" if s.buckets_text() else ""
        lines.append(
            f"**Plan: {s.add} to add, {s.change} to change, {s.destroy} to destroy.{buckets}**"
        )
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
        "| | Cluster | Action | Infra | Instance | Arch | Nodes | GPUs | $/h | Est. cost | Why |",
        "|---|---|---|---|---|---|--:|---|--:|--:|---|",
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
            f"{cell(o.infra)} | {cell(fmt.instance(o))} | {cell(o.arch)} | {spec.num_nodes} | "
            f"{cell(fmt.gpus(o))} | {spec.hourly_cost:.4f} | {est} | {cell(change.reason)} |"
        )
    lines.append("")
    autostops = [
        f"- `{cell(c.cluster)}`: "
        + cell(c.after.autostop.text if c.after.autostop else fmt.NO_AUTOSTOP)
        for c in plan.changes
        if c.action in (Action.CREATE, Action.REPLACE)
        and c.after
        and (c.after.autostop or c.after.hourly_cost > 0)
    ]
    if autostops:
        lines += ["Autostop (idle time before the node agent stops or tears down):", *autostops, ""]
    containers = [
        f"- `{cell(c.cluster)}`: `{cell(c.after.image_id.removeprefix(CONTAINER))}`"
        for c in plan.changes
        if c.action is not Action.DELETE and c.after and c.after.image_id
        and c.after.image_id.startswith(CONTAINER)
    ]  # fmt: skip
    if containers:
        lines += ["Containers (setup and run execute inside them):", *containers, ""]
    notes = [
        f"- ⚠️ `{cell(c.cluster)}`: {cell(note)}"
        for c in plan.changes
        if c.action is not Action.NOOP
        for note in change_notes(c, plan.placement_for(c.cluster))
    ]
    if notes:
        lines += [*notes, ""]
    for change in plan.changes:
        if change.attributes and change.action is not Action.NOOP:
            lines += _attribute_details(change)
    if not plan.destroy:
        for t in plan.tasks:
            if t.alternatives:
                lines += _considered(t, plan.objective)
    lines += job_markdown(plan)
    if plan.egress:
        lines += ["| Egress | Data | Route | Cost | Time |", "|---|--:|---|--:|--:|"]
        for f in plan.egress:
            lines.append(
                f"| {cell(f.src_task)} → {cell(f.dst_task)} | {fmt.plain(f.gigabytes)} GB | "
                f"{cell(f.src_infra)} → {cell(f.dst_infra)} | {cell(egress_cost(f))} | "
                f"{fmt.plain(f.seconds)} s |"
            )
        lines.append("")
    if plan.host_probes:
        lines.append("ssh hosts sized by `skyform check` (config.yaml does not say):")
        lines += [f"- {cell(probe_line(p))}" for p in plan.host_probes]
        lines.append("")
    if plan.untouched:
        lines.append("Clusters this plan leaves as they are:")
        lines += [f"- `{cell(u.cluster)}`: {cell(u.reason)}" for u in plan.untouched]
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
    lines += sections
    digest = content_digest(plan)
    lines += [
        f"Plan digest: `{digest}` (CI applies exactly this plan with "
        f"`skyform apply PLAN.json --expect-digest {digest}`)",
        "",
    ]
    lines.append(
        f"<sub>skyform {cell(plan.skyform_version)} · task "
        f"{cell(fmt.short_digest(plan.task.digest))} · catalog "
        f"{cell(fmt.short_digest(plan.catalog_digest))} · state serial {plan.prior.serial}</sub>"
    )
    return visible("\n".join(lines) + "\n")
