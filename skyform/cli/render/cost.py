"""`skyform cost PLAN`: the per-cluster cost table and its CSV form; `emit` for every cost view."""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Callable

from pydantic import BaseModel
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from skyform.cli.render import fmt
from skyform.cli.render.console import make_console
from skyform.cli.render.output import print_json
from skyform.cli.render.visible import visible
from skyform.cost.model import ClusterCost, PlanCost
from skyform.plan.model import PlacedOffer

NOT_SPOT = "-"
NO_TWIN = "n/a"


def saving_text(c: ClusterCost) -> str:
    """The spot saving cell: "-" for on-demand offers, "n/a" when the catalog has no twin."""
    if not c.offer.spot:
        return NOT_SPOT
    return NO_TWIN if c.spot_saving is None else f"{c.spot_saving:,.2f}"


def saving_line(cost: PlanCost) -> str | None:
    t = cost.totals
    spot = [c for c in cost.clusters if c.offer.spot]
    if not spot:
        return None
    text = f"Spot saving: {fmt.usd(t.spot_saving)} versus on-demand of the same offers"
    if t.spot_saving_unknown:
        n = t.spot_saving_unknown
        text += f" (n/a for {n} cluster{'s' if n > 1 else ''}: the catalog sells no on-demand twin)"
    return text


def twin_note(cost: PlanCost) -> str | None:
    if not cost.twins_from_other_catalog:
        return None
    return (
        f"On-demand twins priced from the current catalog "
        f"({fmt.short_digest(cost.twin_catalog_digest or '')}), not the plan's "
        f"({fmt.short_digest(cost.catalog_digest)}); `skyform cost reprice` shows the drift."
    )


def total_line(cost: PlanCost) -> str:
    t = cost.totals
    return (
        f"Total: {fmt.usd(t.hourly_after, hourly=True)} · estimated {fmt.usd(t.total_cost)} "
        f"over {fmt.hours(t.estimated_hours)} (compute {fmt.usd(t.compute_cost)} + egress "
        f"{fmt.usd(t.egress_cost)})"
    )


def destroy_line(cost: PlanCost) -> str:
    t = cost.totals
    names = ", ".join(cost.deleted) or "nothing"
    return (
        f"This plan destroys {names}: hourly {fmt.usd(t.hourly_before, hourly=True)} → "
        f"{fmt.usd(t.hourly_after, hourly=True)}."
    )


def cost_table(cost: PlanCost) -> Table:
    """One row per cluster: its name, and under it where it runs (dollars unless marked)."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    table.add_column("CLUSTER / OFFER", overflow="fold")
    for col in ("NODES", "$/h", "HOURS", "COMPUTE", "EGRESS", "TOTAL", "SPOT SAVING"):
        table.add_column(col, justify="right", no_wrap=True)
    for c in cost.clusters:
        table.add_row(
            offer_cell(c.cluster, c.offer),
            str(c.num_nodes),
            f"{c.hourly_cost:.4f}",
            hours_text(c.estimated_hours),
            f"{c.compute_cost:,.2f}",
            f"{c.egress_cost:,.2f}",
            f"{c.total_cost:,.2f}",
            saving_text(c),
        )
    t = cost.totals
    table.add_section()
    table.add_row(
        "TOTAL",
        "",
        f"{t.hourly_after:.4f}",
        hours_text(t.estimated_hours),
        f"{t.compute_cost:,.2f}",
        f"{t.egress_cost:,.2f}",
        f"{t.total_cost:,.2f}",
        f"{t.spot_saving:,.2f}" if any(c.offer.spot for c in cost.clusters) else NOT_SPOT,
    )
    return table


def offer_cell(name: str, offer: PlacedOffer) -> str:
    """`name`, then the offer's infra and instance on lines of their own (tables stay narrow)."""
    return f"{escape(name)}\n[dim]  {escape(offer.infra)}\n  {escape(fmt.instance(offer))}[/]"


def hours_text(value: float) -> str:
    return f"{round(value, 2):g}"


def autostop_lines(cost: PlanCost) -> list[str]:
    """What autostop bounds: the job's hours plus the idle tail, at the cluster's price."""
    return [
        f"Autostop {c.autostop} on {c.cluster}: compute at most {fmt.usd(c.compute_bound)} "
        f"({hours_text(c.estimated_hours)} h of job + {round((c.idle_hours or 0) * 60):g} min "
        f"idle at {fmt.usd(c.hourly_cost, hourly=True)}); without it, "
        f"{fmt.usd(c.hourly_cost, hourly=True)} until `skyform down`"
        for c in cost.clusters
        if c.autostop is not None and c.compute_bound is not None
    ]


def render_cost(cost: PlanCost, console: Console) -> None:
    console.print(f"Cost estimate for {escape(cost.task_path)} (objective: {cost.objective})")
    console.print()
    if cost.destroy:
        console.print(destroy_line(cost))
        return
    console.print(cost_table(cost))
    console.print()
    for f in cost.egress:
        console.print(
            f"Egress: {escape(f.src_task)} → {escape(f.dst_task)}: {f.gigabytes:g} GB "
            f"{escape(f.src_infra)} → {escape(f.dst_infra)}, {fmt.usd(f.cost)}"
        )
    console.print(total_line(cost))
    for line in (saving_line(cost), twin_note(cost), *autostop_lines(cost)):
        if line:
            console.print(escape(line), soft_wrap=True)
    if cost.deleted:
        console.print(f"Destroyed by this plan: {escape(', '.join(cost.deleted))}")


CSV_COLUMNS = (
    "cluster",
    "task",
    "action",
    "cloud",
    "region",
    "zone",
    "instance_type",
    "spot",
    "nodes",
    "hourly_price_per_node",
    "hourly_cost",
    "estimated_hours",
    "compute_cost",
    "egress_gb",
    "egress_cost",
    "total_cost",
    "on_demand_hourly_cost",
    "spot_saving",
)


def _csv_number(value: float | None) -> str:
    return "" if value is None else f"{value:.6f}".rstrip("0").rstrip(".")


def render_cost_csv(cost: PlanCost) -> str:
    """One row per cluster, then a `TOTAL` row (empty cells where a sum means nothing)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for c in cost.clusters:
        o = c.offer
        writer.writerow(
            [
                c.cluster,
                c.task,
                c.action.value if c.action else "",
                o.cloud,
                o.region,
                o.zone or "",
                o.instance_type,
                "true" if o.spot else "false",
                c.num_nodes,
                *map(
                    _csv_number,
                    (
                        o.hourly_price,
                        c.hourly_cost,
                        c.estimated_hours,
                        c.compute_cost,
                        c.egress_gb,
                        c.egress_cost,
                        c.total_cost,
                        c.on_demand_hourly_cost,
                        c.spot_saving,
                    ),
                ),
            ]
        )
    t = cost.totals
    writer.writerow(
        [
            "TOTAL",
            *[""] * 9,
            *map(
                _csv_number,
                (t.hourly_after, t.estimated_hours, t.compute_cost, None, t.egress_cost),
            ),
            _csv_number(t.total_cost),
            "",
            _csv_number(t.spot_saving),
        ]
    )
    return out.getvalue()


def emit(
    result: BaseModel,
    render_table: Callable[..., None],
    *,
    as_json: bool = False,
    text: str | None = None,
) -> None:
    """A cost view in the format asked for: the model as JSON, a text form already rendered
    (markdown, CSV), or else the rich table on the terminal."""
    if as_json:
        print_json(result.model_dump(mode="json"))
    elif text is not None:  # markdown or CSV of plan text: its controls shown, not acted on
        sys.stdout.write(visible(text))
    else:
        render_table(result, make_console())
