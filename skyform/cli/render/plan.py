"""`skyform plan` / `skyform show`: the plan as a person reads it, Terraform style.

Reads only the serialized Plan. Layout:
  legend (only the symbols used) · one block per cluster change with its attributes, what it
  runs and the "considered resources" table · the multi-task "Best plan" table · egress ·
  summary line · the plan's content digest.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from skyform.cli.render import fmt
from skyform.cli.render.lines import Grid, Justify, Printer, escape
from skyform.cli.render.plan_buckets import bucket_lines
from skyform.cli.render.plan_job import group_names, job_text_lines
from skyform.cli.render.plan_kubernetes import kubernetes_lines
from skyform.cli.render.plan_notes import change_notes, egress_cost, probe_line, why_chosen
from skyform.cli.render.textdiff import TEXT_ATTRS, heredoc
from skyform.plan.containers import PREFIX as CONTAINER
from skyform.plan.parts import Action
from skyform.plan.planjson import content_digest

if TYPE_CHECKING:  # the models, or the strict reader's views of them (plan/planview.py)
    from collections.abc import Sequence

    from skyform.ops.preview import ClusterPreview
    from skyform.plan.model import ClusterChange, ClusterSpec, Plan, TaskPlacement

LEGEND = {
    Action.CREATE: "create",
    Action.UPDATE: "update in-place",
    Action.REPLACE: "destroy and then create replacement",
    Action.DELETE: "destroy",
}
VERB = {
    Action.CREATE: "will be created",
    Action.UPDATE: "will be updated in-place",
    Action.REPLACE: "must be replaced",
    Action.DELETE: "will be destroyed",
}
STYLE = {
    Action.CREATE: "green",
    Action.UPDATE: "yellow",
    Action.REPLACE: "magenta",
    Action.DELETE: "red",
}


Value = str | int | float | bool | None
DIGEST_ATTRS = frozenset({"setup_digest", "job"})


def spec_attributes(spec: ClusterSpec, placement: TaskPlacement | None) -> list[tuple[str, Value]]:
    offer = spec.offer
    attrs: list[tuple[str, Value]] = [
        ("infra", offer.infra),
        ("instance_type", offer.instance_type),
        ("arch", offer.arch),
        ("spot", offer.spot),
        ("nodes", spec.num_nodes),
        ("accelerators", fmt.gpus(offer) if offer.accelerator else None),
        ("vcpus", offer.vcpus),
        ("memory_gb", offer.memory_gib),
        ("disk_size_gb", spec.disk_size),
    ]
    if spec.image_id and spec.image_id.startswith(CONTAINER):  # what setup and run run in
        attrs.append(("container", spec.image_id.removeprefix(CONTAINER)))
    if spec.ports:
        attrs.append(("ports", ", ".join(spec.ports)))
    if spec.labels:
        attrs.append(("labels", ", ".join(f"{k}={v}" for k, v in sorted(spec.labels.items()))))
    if spec.autostop:
        attrs.append(("autostop", spec.autostop.text))
    elif spec.hourly_cost > 0 and placement is not None:  # one to be created
        attrs.append(("autostop", fmt.NO_AUTOSTOP))
    attrs.append(("hourly_cost", fmt.usd(spec.hourly_cost, hourly=True)))
    if placement is not None:
        attrs.append(
            (
                "estimated_cost",
                f"{fmt.usd(placement.estimated_cost)} ({fmt.hours(placement.estimated_hours)})",
            )
        )
    return attrs


def _attr_lines(change: ClusterChange, placement: TaskPlacement | None) -> list[str]:
    symbol = {Action.CREATE: "+", Action.DELETE: "-"}.get(change.action)
    spec = change.after if change.action is not Action.DELETE else change.before
    if symbol and spec is not None:
        pairs = spec_attributes(spec, placement if change.action is Action.CREATE else None)
        width = max(len(k) for k, _ in pairs)
        return [f"{symbol} {k.ljust(width)} = {repr_value(v)}" for k, v in pairs]
    width = max((len(a.path) for a in change.attributes), default=0)
    lines = []
    for attr in change.attributes:
        if attr.path in TEXT_ATTRS:
            lines += heredoc(attr.path, attr.before, attr.after)
            continue
        note = "  # forces replacement" if attr.forces_replacement else ""
        before, after = (
            repr_value(fmt.short_digest(v) if v and attr.path in DIGEST_ATTRS else v)
            for v in (attr.before, attr.after)
        )
        lines.append(f"~ {attr.path.ljust(width)} = {before} -> {after}{note}")
    return lines


def repr_value(value: Value) -> str:
    """HCL-ish literals: strings quoted, numbers and booleans bare, None as null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return fmt.number(value)
    return f'"{value}"'


def considered_table(placement: TaskPlacement) -> Grid:
    with_egress = any(alt.egress_cost for alt in placement.alternatives)
    columns: list[tuple[str, Justify]] = [
        ("INFRA", "left"),
        ("INSTANCE", "left"),
        ("ARCH", "left"),
        ("vCPUs", "right"),
        ("MEM(GB)", "right"),
        ("GPUS", "left"),
        ("$/h", "right"),
        ("EST. $", "right"),
    ]
    if with_egress:
        columns += [("EGRESS $", "right"), ("TOTAL $", "right")]
    # INFRA folds onto a second line rather than any figure being cut short
    table = Grid([*columns, ("CHOSEN", "center")], folds="INFRA")
    for alt in placement.alternatives:
        o = alt.offer
        cells = [
            o.infra,
            fmt.instance(o),
            o.arch,
            fmt.number(o.vcpus),
            fmt.number(o.memory_gib),
            fmt.gpus(o),
            f"{alt.hourly_cost:.4f}",
            f"{alt.estimated_cost:.2f}",
        ]
        if with_egress:
            cells += [f"{alt.egress_cost:.2f}", f"{alt.estimated_cost + alt.egress_cost:.2f}"]
        table.rows.append([*cells, "✔" if alt.chosen else ""])
    return table


def best_plan_table(plan: Plan) -> Grid:
    columns: list[tuple[str, Justify]] = [
        ("TASK", "left"),
        ("#NODES", "right"),
        ("INFRA", "left"),
        ("INSTANCE", "left"),
        ("GPUS", "left"),
        ("START (h)", "right"),
        ("COST ($)", "right"),
    ]
    table = Grid(columns, folds="INFRA")
    for t in plan.tasks:
        o = t.offer
        table.rows.append(
            [
                t.task,
                str(t.num_nodes),
                o.infra,
                fmt.instance(o),
                fmt.gpus(o),
                fmt.plain(t.start_hours),
                f"{t.estimated_cost:.2f}",
            ]
        )
    return table


def summary_line(plan: Plan) -> str:
    s = plan.summary
    buckets = s.buckets_text()
    line = f"Plan: {s.add} to add, {s.change} to change, {s.destroy} to destroy."
    return f"{line} {buckets}" if buckets else line


def cost_line(plan: Plan) -> str:
    s = plan.summary
    text = (
        f"Estimated cost: {fmt.usd(s.estimated_cost)} over {fmt.hours(s.estimated_hours)}"
        f" · hourly {fmt.usd(s.hourly_before, hourly=True)} → "
        f"{fmt.usd(s.hourly_after, hourly=True)}"
    )
    if s.egress_cost:
        text += f" · egress {fmt.usd(s.egress_cost)}"
    return text


def render_plan(
    plan: Plan,
    console: Printer,
    *,
    saved_to: str | None = None,
    previews: Sequence[ClusterPreview] | None = None,
) -> None:
    visible = [c for c in plan.changes if c.action is not Action.NOOP]
    used = [a for a in LEGEND if any(c.action is a for c in visible)]
    if used:
        console.line("Cluster actions are indicated with the following symbols:")
        for action in used:
            console.line(f"[{STYLE[action]}]{action.symbol:>3}[/] {LEGEND[action]}")
        console.line()
        console.line(f"skyform will perform the following actions (objective: {plan.objective}):")
        console.line()
    if plan.task.overrides:
        console.line(f"Planned with resource flags: {escape(fmt.flags(plan))}", soft_wrap=True)
        console.line()
    for change in visible:
        _render_change(change, plan, console)
    for line in bucket_lines(plan.buckets, plan.shown_path):
        console.line(escape(line), soft_wrap=True)
    if plan.buckets:
        console.line()
    if plan.blocked:
        console.line("Blocked placements honoured by this plan:")
        for b in plan.blocked:
            console.line(
                f"  - {escape(b.describe())}" + (f" ({escape(b.reason)})" if b.reason else "")
            )
        console.line()
    k8s_lines = kubernetes_lines(plan)
    for line in k8s_lines:
        console.line(escape(line), soft_wrap=True)
    if k8s_lines:
        console.line()
    if len(plan.tasks) > 1 and not plan.destroy:
        console.line("Best plan:")
        console.grid(best_plan_table(plan))
        console.line()
    for flow in plan.egress:
        console.line(
            f"Egress: {escape(flow.src_task)} → {escape(flow.dst_task)}: "
            f"{fmt.plain(flow.gigabytes)} GB "
            f"{escape(flow.src_infra)} → {escape(flow.dst_infra)}, {escape(egress_cost(flow))}, "
            f"~{fmt.plain(flow.seconds)} s",
            soft_wrap=True,
        )
    if plan.egress:
        console.line()
    if plan.host_probes:
        console.line("ssh hosts sized by `skyform check` (config.yaml does not say):")
        for probe in plan.host_probes:
            console.line(f"  - {escape(probe_line(probe))}", soft_wrap=True)
        console.line()
    if plan.untouched:
        console.line("Clusters this plan leaves as they are:")
        for u in plan.untouched:
            console.line(f"  - {escape(u.cluster)}: {escape(u.reason)}", soft_wrap=True)
        console.line()
    if not plan.summary.has_changes:
        console.line("[green]No changes.[/] The clusters match the task file.")
    else:
        console.line(f"[bold]{summary_line(plan)}[/]")
    if not plan.destroy:
        console.line(cost_line(plan))
    console.line(f"Plan digest: {content_digest(plan)}")
    if previews is not None:
        from skyform.cli.render.plan_preview import text_lines

        console.line()
        for line in text_lines(previews):  # shown as is, never as markup
            console.line(line, markup=False, soft_wrap=True)
    if saved_to and plan.summary.has_changes:
        console.line()
        console.line(f"Saved the plan to: {escape(saved_to)}")
        command = f"skyform apply {shlex.quote(saved_to)}"
        console.line(f"To perform exactly these actions, run: {escape(command)}")


def _render_change(change: ClusterChange, plan: Plan, console: Printer) -> None:
    style = STYLE[change.action]
    placement = plan.placement_for(change.cluster)
    name = escape(change.cluster)
    console.line(f'  [bold]# cluster "{name}" {VERB[change.action]}[/]')
    console.line(f"  # ({escape(change.reason)})", soft_wrap=True)
    for note in change_notes(change, placement):
        console.line(f"  # {escape(note)}", soft_wrap=True)
    console.line(f'[{style}]{change.action.symbol:>3}[/] cluster "{name}" {{')
    for line in _attr_lines(change, placement):  # user text: printed as is, never as markup
        console.line(f"      {line}", markup=False, soft_wrap=True)
    console.line("    }")
    if placement is not None and change.action is not Action.NOOP:
        for line in job_text_lines(placement, group_names(plan, placement), plan.shown_path):
            console.line(line, markup=False, soft_wrap=True)
    if placement is not None and placement.alternatives and change.action is not Action.DELETE:
        console.line()
        console.line(
            f"    Considered resources ({fmt.nodes(placement.num_nodes)}, "
            f"asked: {escape(placement.request)}):"
        )
        console.grid(considered_table(placement))
        why = why_chosen(placement, plan.objective)
        if why:
            console.line(f"    {escape(why)}", soft_wrap=True)
    console.line()
