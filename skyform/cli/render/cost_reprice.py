"""`skyform cost reprice`: a plan's offers priced against another catalog, drift per offer."""

from __future__ import annotations

import shlex

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from skyform.cli.render import fmt
from skyform.cli.render.cost import offer_cell
from skyform.cli.render.cost_diff import delta_usd
from skyform.cost.model import Reprice, RepricedCluster

GONE = "gone"
ONPREM_NOTE = " The local/ssh pool settings in config.yaml changed since the plan was made."


def drift_text(c: RepricedCluster) -> str:
    """Per-node price change: `+0.5345 (+21.7%)`, `0`, or `-` when the offer is gone."""
    if c.new_hourly_price is None:
        return "-"
    old, new = c.old_hourly_price, c.new_hourly_price
    if old == new:
        return "0"
    pct = f" ({(new - old) / old:+.1%})" if old else ""
    return f"{new - old:+.4f}{pct}"


def missing_text(r: Reprice) -> str:
    gone = ", ".join(f"{c.cluster} ({c.offer_id})" for c in r.missing)
    n = len(r.missing)
    return (
        f"{n} offer{' is' if n == 1 else 's are'} no longer in this catalog: {gone}. "
        f"The total keeps {'its' if n == 1 else 'their'} planned price; re-plan to place "
        f"{'it' if n == 1 else 'them'} again: skyform plan {shlex.quote(r.task_path)} -o PLAN.json"
    )


def catalog_line(r: Reprice) -> str:
    same = r.catalog_digest == r.plan_catalog_digest
    return (
        f"Repricing {r.task_path} against the {r.catalog_kind} catalog {r.catalog_path} "
        f"({fmt.short_digest(r.catalog_digest)}); "
        + (
            "the plan was priced with this same catalog."
            if same
            else f"the plan was priced with {fmt.short_digest(r.plan_catalog_digest)}."
        )
        + (ONPREM_NOTE if r.onprem_changed else "")
        + " Prices are per node-hour."
    )


def reprice_table(r: Reprice) -> Table:
    """One row per cluster: its name, and under it the offer it was planned on."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    table.add_column("CLUSTER / OFFER", overflow="fold")
    for col in ("NODES", "PLANNED $/h", "NOW $/h", "DRIFT", "PLANNED $", "NOW $"):
        table.add_column(col, justify="right", no_wrap=True)
    for c in r.clusters:
        table.add_row(
            offer_cell(c.cluster, c.offer),
            str(c.num_nodes),
            f"{c.old_hourly_price:.4f}",
            f"[red]{GONE}[/]" if c.new_hourly_price is None else f"{c.new_hourly_price:.4f}",
            drift_text(c),
            f"{c.old_cost:,.2f}",
            "-" if c.new_cost is None else f"{c.new_cost:,.2f}",
        )
    return table


def render_reprice(r: Reprice, console: Console) -> None:
    console.print(escape(catalog_line(r)), soft_wrap=True)
    console.print()
    if r.clusters:
        console.print(reprice_table(r))
        console.print()
    for f in r.egress:
        console.print(
            f"Egress: {escape(f.flow.src_task)} → {escape(f.flow.dst_task)}: "
            f"{f.flow.gigabytes:g} GB {escape(f.flow.src_infra)} → {escape(f.flow.dst_infra)}, "
            f"{fmt.usd(f.flow.cost)} → {fmt.usd(f.new_cost)}"
        )
    console.print(
        f"Total: {fmt.usd(r.old_total)} → {fmt.usd(r.new_total)} "
        f"({delta_usd(r.new_total - r.old_total)})"
    )
    if r.missing:
        console.print(f"[yellow]{escape(missing_text(r))}[/]", soft_wrap=True)
