"""`skyform plan` / `skyform show`: the plan as a person reads it, Terraform style.

Reads only the serialized Plan. Layout:
  legend (only the symbols used) · one block per cluster change with its attributes, what it
  runs and the "considered resources" table · the multi-task "Best plan" table · egress ·
  summary line · the plan's content digest.
"""

from __future__ import annotations

import shlex

from rich import box
from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table

from skyform.cli.render import fmt
from skyform.cli.render.plan_buckets import bucket_lines
from skyform.cli.render.plan_job import group_names, job_text_lines
from skyform.cli.render.plan_kubernetes import kubernetes_lines
from skyform.cli.render.plan_notes import change_notes, egress_cost, probe_line, why_chosen
from skyform.cli.render.textdiff import TEXT_ATTRS, heredoc
from skyform.plan.model import Action, ClusterChange, ClusterSpec, Plan, TaskPlacement
from skyform.plan.planfile import content_digest

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
    if spec.ports:
        attrs.append(("ports", ", ".join(spec.ports)))
    if spec.labels:
        attrs.append(("labels", ", ".join(f"{k}={v}" for k, v in sorted(spec.labels.items()))))
    if spec.autostop:
        attrs.append(("autostop", spec.autostop.text))
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


def considered_table(placement: TaskPlacement) -> Table:
    with_egress = any(alt.egress_cost for alt in placement.alternatives)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=0)
    columns: list[tuple[str, JustifyMethod]] = [
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
    for col, justify in [*columns, ("CHOSEN", "center")]:
        # INFRA folds onto a second line rather than any figure being cut short
        table.add_column(col, justify=justify, no_wrap=col != "INFRA", overflow="fold")
    for alt in placement.alternatives:
        o = alt.offer
        cells = [
            escape(o.infra),
            escape(fmt.instance(o)),
            escape(o.arch),
            fmt.number(o.vcpus),
            fmt.number(o.memory_gib),
            escape(fmt.gpus(o)),
            f"{alt.hourly_cost:.4f}",
            f"{alt.estimated_cost:.2f}",
        ]
        if with_egress:
            cells += [f"{alt.egress_cost:.2f}", f"{alt.estimated_cost + alt.egress_cost:.2f}"]
        table.add_row(*cells, "✔" if alt.chosen else "")
    return table


def best_plan_table(plan: Plan) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=0)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("TASK", "left"),
        ("#NODES", "right"),
        ("INFRA", "left"),
        ("INSTANCE", "left"),
        ("GPUS", "left"),
        ("START (h)", "right"),
        ("COST ($)", "right"),
    )
    for col, justify in columns:
        table.add_column(
            col,
            justify=justify,
            no_wrap=col != "INFRA",
            overflow="fold",
        )
    for t in plan.tasks:
        o = t.offer
        table.add_row(
            escape(t.task),
            str(t.num_nodes),
            escape(o.infra),
            escape(fmt.instance(o)),
            escape(fmt.gpus(o)),
            f"{t.start_hours:g}",
            f"{t.estimated_cost:.2f}",
        )
    return table


def summary_line(plan: Plan) -> str:
    s = plan.summary
    return f"Plan: {s.add} to add, {s.change} to change, {s.destroy} to destroy."


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


def render_plan(plan: Plan, console: Console, *, saved_to: str | None = None) -> None:
    visible = [c for c in plan.changes if c.action is not Action.NOOP]
    used = [a for a in LEGEND if any(c.action is a for c in visible)]
    if used:
        console.print("Cluster actions are indicated with the following symbols:")
        for action in used:
            console.print(f"[{STYLE[action]}]{action.symbol:>3}[/] {LEGEND[action]}")
        console.print()
        console.print(f"skyform will perform the following actions (objective: {plan.objective}):")
        console.print()
    if plan.task.overrides:
        console.print(f"Planned with resource flags: {escape(fmt.flags(plan))}", soft_wrap=True)
        console.print()
    for change in visible:
        _render_change(change, plan, console)
    for line in bucket_lines(plan.buckets):
        console.print(escape(line), soft_wrap=True)
    if plan.buckets:
        console.print()
    if plan.blocked:
        console.print("Blocked placements honoured by this plan:")
        for b in plan.blocked:
            console.print(
                f"  - {escape(b.describe())}" + (f" ({escape(b.reason)})" if b.reason else "")
            )
        console.print()
    k8s_lines = kubernetes_lines(plan)
    for line in k8s_lines:
        console.print(escape(line), soft_wrap=True)
    if k8s_lines:
        console.print()
    if len(plan.tasks) > 1 and not plan.destroy:
        console.print("Best plan:")
        console.print(best_plan_table(plan))
        console.print()
    for flow in plan.egress:
        console.print(
            f"Egress: {escape(flow.src_task)} → {escape(flow.dst_task)}: {flow.gigabytes:g} GB "
            f"{escape(flow.src_infra)} → {escape(flow.dst_infra)}, {escape(egress_cost(flow))}, "
            f"~{flow.seconds:g} s",
            soft_wrap=True,
        )
    if plan.egress:
        console.print()
    if plan.host_probes:
        console.print("ssh hosts sized by `skyform check` (config.yaml does not say):")
        for probe in plan.host_probes:
            console.print(f"  - {escape(probe_line(probe))}", soft_wrap=True)
        console.print()
    if plan.untouched:
        console.print("Clusters this plan leaves as they are:")
        for u in plan.untouched:
            console.print(f"  - {escape(u.cluster)}: {escape(u.reason)}", soft_wrap=True)
        console.print()
    if not plan.summary.has_changes:
        console.print("[green]No changes.[/] The clusters match the task file.")
    else:
        console.print(f"[bold]{summary_line(plan)}[/]")
    if not plan.destroy:
        console.print(cost_line(plan))
    console.print(f"Plan digest: {content_digest(plan)}", highlight=False)
    if saved_to and plan.summary.has_changes:
        console.print()
        console.print(f"Saved the plan to: {escape(saved_to)}")
        command = f"skyform apply {shlex.quote(saved_to)}"
        console.print(f"To perform exactly these actions, run: {escape(command)}")


def _render_change(change: ClusterChange, plan: Plan, console: Console) -> None:
    style = STYLE[change.action]
    placement = plan.placement_for(change.cluster)
    name = escape(change.cluster)
    console.print(f'  [bold]# cluster "{name}" {VERB[change.action]}[/]')
    console.print(f"  # ({escape(change.reason)})", soft_wrap=True)
    for note in change_notes(change, placement):
        console.print(f"  # {escape(note)}", soft_wrap=True)
    console.print(f'[{style}]{change.action.symbol:>3}[/] cluster "{name}" {{')
    for line in _attr_lines(change, placement):  # user text: printed as is, never as markup
        console.print(f"      {line}", soft_wrap=True, markup=False)
    console.print("    }")
    if placement is not None and change.action is not Action.NOOP:
        for line in job_text_lines(placement, group_names(plan, placement)):
            console.print(line, soft_wrap=True, markup=False, highlight=False)
    if placement is not None and placement.alternatives and change.action is not Action.DELETE:
        console.print()
        console.print(
            f"    Considered resources ({fmt.nodes(placement.num_nodes)}, "
            f"asked: {escape(placement.request)}):"
        )
        table = considered_table(placement)
        console.print(table)
        why = why_chosen(placement, plan.objective)
        if why:
            console.print(f"    {escape(why)}", soft_wrap=True)
    console.print()
