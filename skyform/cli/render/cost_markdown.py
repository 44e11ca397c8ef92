"""Cost views as pull-request comments (GitHub-flavoured markdown). Pure: models -> str.

`cost_comment` is the whole comment for a saved plan: the plan (as `show --markdown` renders
it) followed by its cost breakdown, so one command posts everything a reviewer needs.
"""

from __future__ import annotations

from skyform.cli.render import fmt
from skyform.cli.render.cost import (
    NO_TWIN,
    NOT_SPOT,
    autostop_lines,
    hours_text,
    saving_line,
    total_line,
    twin_note,
)
from skyform.cli.render.cost_diff import SYMBOL_MD, delta_usd, side_text
from skyform.cli.render.cost_reprice import ONPREM_NOTE, drift_text, missing_text
from skyform.cli.render.plan_markdown import cell, render_plan_markdown
from skyform.cli.render.visible import visible
from skyform.cost.model import ClusterCost, ClusterDelta, PlanComparison, PlanCost, Reprice
from skyform.plan.model import Plan

FOOTER = "<sub>"


def cost_section(cost: PlanCost) -> list[str]:
    lines = ["#### Cost estimate", ""]
    if cost.destroy:
        t = cost.totals
        lines.append(
            f"Destroys {cell(', '.join(cost.deleted) or 'nothing')}: hourly "
            f"{fmt.usd(t.hourly_before, hourly=True)} → {fmt.usd(t.hourly_after, hourly=True)}."
        )
        return [*lines, ""]
    lines += [
        "| Cluster | Infra | Instance | Nodes | $/h | Hours | Compute | Egress | Total "
        "| Spot saving |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for c in cost.clusters:
        lines.append(
            f"| `{cell(c.cluster)}` | {cell(c.offer.infra)} | {cell(fmt.instance(c.offer))} | "
            f"{c.num_nodes} | {c.hourly_cost:.4f} | {hours_text(c.estimated_hours)} | "
            f"{fmt.usd(c.compute_cost)} | {fmt.usd(c.egress_cost)} | {fmt.usd(c.total_cost)} | "
            f"{_saving(c)} |"
        )
    t = cost.totals
    lines += [
        f"| **Total** | | | | **{t.hourly_after:.4f}** | {hours_text(t.estimated_hours)} | "
        f"{fmt.usd(t.compute_cost)} | {fmt.usd(t.egress_cost)} | **{fmt.usd(t.total_cost)}** | "
        f"{fmt.usd(t.spot_saving) if any(c.offer.spot for c in cost.clusters) else '-'} |",
        "",
        total_line(cost),
    ]
    lines += [line for line in (saving_line(cost), twin_note(cost)) if line]
    lines += autostop_lines(cost)
    lines.append("")
    return lines


def _saving(c: ClusterCost) -> str:
    if not c.offer.spot:
        return NOT_SPOT
    return NO_TWIN if c.spot_saving is None else fmt.usd(c.spot_saving)


def cost_comment(plan: Plan, cost: PlanCost) -> str:
    """The plan comment with the cost section placed before its provenance footer."""
    body = render_plan_markdown(plan).rstrip("\n").split("\n")
    footer = [body.pop()] if body and body[-1].startswith(FOOTER) else []
    return visible("\n".join(body + cost_section(cost) + footer) + "\n")


def render_diff_markdown(cmp: PlanComparison) -> str:
    t = cmp.totals
    lines = [
        f"### skyform cost diff: `{cell(cmp.old_label)}` → `{cell(cmp.new_label)}`",
        "",
        f"Hourly **{fmt.usd(t.hourly_before, hourly=True)} → "
        f"{fmt.usd(t.hourly_after, hourly=True)}** "
        f"({delta_usd(t.hourly_after - t.hourly_before, hourly=True)}) · estimated "
        f"**{fmt.usd(t.estimated_before)} → {fmt.usd(t.estimated_after)}** "
        f"({delta_usd(t.estimated_after - t.estimated_before)})"
        + (
            f" · egress {fmt.usd(t.egress_before)} → {fmt.usd(t.egress_after)}"
            if t.egress_before or t.egress_after
            else ""
        ),
        "",
    ]
    changed = cmp.changed_clusters
    if changed:
        lines += [
            "| | Cluster | Before | After | $/h | Δ $/h | Est. | Δ Est. | What changed |",
            "|---|---|---|---|--:|--:|--:|--:|---|",
        ]
        for d in changed:
            after_hourly = d.after.hourly_cost if d.after else 0.0
            after_est = d.after.estimated_cost if d.after else 0.0
            lines.append(
                f"| {SYMBOL_MD[d.kind]} | `{cell(d.cluster)}` | {cell(side_text(d.before))} | "
                f"{cell(side_text(d.after))} | {after_hourly:.4f} | "
                f"{delta_usd(d.hourly_delta, hourly=True)} | {fmt.usd(after_est)} | "
                f"{delta_usd(d.estimated_delta)} | {cell(what_changed(d))} |"
            )
        lines.append("")
    else:
        lines += ["No cluster changed placement or cost.", ""]
    unchanged = [d.cluster for d in cmp.clusters if d.kind == "unchanged"]
    if unchanged:
        lines += [f"Unchanged: {', '.join(f'`{cell(n)}`' for n in unchanged)}", ""]
    if cmp.reasons:
        lines += ["Made from different inputs:", ""]
        lines += [f"- {cell(r.message)}" for r in cmp.reasons]
        lines.append("")
    if cmp.blocked:
        lines += ["Blocked placements in the new plan:", ""]
        for b in cmp.blocked:
            new = " **(new)**" if b in cmp.newly_blocked else ""
            why = f" — {cell(b.reason)}" if b.reason else ""
            lines.append(f"- {cell(b.describe())}{why}{new}")
        lines.append("")
    if cmp.allowed:
        lines += ["The new plan allows only:", ""]
        lines += [f"- {cell(a.describe())}" for a in cmp.allowed]
        lines.append("")
    return visible("\n".join(lines))


def what_changed(d: ClusterDelta) -> str:
    words = (["placement"] if d.moved else []) + d.notes
    return "; ".join(words) or d.kind


def render_reprice_markdown(r: Reprice) -> str:
    lines = [
        f"### skyform cost reprice for `{cell(r.task_path)}`",
        "",
        f"Priced against the {r.catalog_kind} catalog ({fmt.short_digest(r.catalog_digest)}); "
        f"the plan was priced with {fmt.short_digest(r.plan_catalog_digest)}."
        + (ONPREM_NOTE if r.onprem_changed else "")
        + " Prices are per node-hour.",
        "",
        "| Cluster | Offer | Nodes | Planned $/h | Now $/h | Drift | Planned | Now |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for c in r.clusters:
        now_price = "**gone**" if c.new_hourly_price is None else f"{c.new_hourly_price:.4f}"
        drift = "-" if c.new_hourly_price is None else drift_text(c)
        now_cost = "-" if c.new_cost is None else fmt.usd(c.new_cost)
        lines.append(
            f"| `{cell(c.cluster)}` | `{cell(c.offer_id)}` | {c.num_nodes} | "
            f"{c.old_hourly_price:.4f} | {now_price} | {drift} | {fmt.usd(c.old_cost)} | "
            f"{now_cost} |"
        )
    lines.append("")
    for f in r.egress:
        lines.append(
            f"- Egress {cell(f.flow.src_task)} → {cell(f.flow.dst_task)} "
            f"({f.flow.gigabytes:g} GB): {fmt.usd(f.flow.cost)} → {fmt.usd(f.new_cost)}"
        )
    lines += [
        "",
        f"**Total {fmt.usd(r.old_total)} → {fmt.usd(r.new_total)}** "
        f"({delta_usd(r.new_total - r.old_total)})",
        "",
    ]
    if r.missing:
        lines += [missing_text(r), ""]
    return visible("\n".join(lines))
