"""`skyform cost diff` and `skyform plan --check`: what changed between two plans, in words.

Layout (like `infracost diff`): one block per changed cluster — symbol, name, what changed,
hourly and estimated cost before → after with the difference — then blocked placements, the
inputs that differ, and totals.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from skyform.cli.render import fmt
from skyform.cost.model import ClusterDelta, ClusterSide, PlanCheck, PlanComparison
from skyform.cost.policy import Violation

SYMBOL = {"added": "+", "removed": "-", "changed": "~", "unchanged": " "}
SYMBOL_MD = {"added": "➕", "removed": "➖", "changed": "🔄", "unchanged": "✔️"}
STYLE = {"added": "green", "removed": "red", "changed": "yellow", "unchanged": "white"}


def delta_usd(value: float, *, hourly: bool = False) -> str:
    """Signed money: +$1.20, -$0.50, $0.00 (hourly: +$0.2599/h)."""
    value = round(value, 6) + 0.0
    if value == 0:
        return fmt.usd(0.0, hourly=hourly)
    sign = "+" if value > 0 else "-"
    return sign + fmt.usd(abs(value), hourly=hourly)


def side_text(side: ClusterSide | None) -> str:
    """`aws/us-east-1/use1-az1 p4d.24xlarge [Spot] ×2 (create)`; `-` when absent."""
    if side is None:
        return "-"
    action = f" ({side.action.value})" if side.action is not None else ""
    if side.offer is None:
        return f"not placed{action}"
    nodes = f" ×{side.num_nodes}" if side.num_nodes != 1 else ""
    return f"{side.offer.infra} {fmt.instance(side.offer)}{nodes}{action}"


def _money_line(label: str, before: float, after: float, *, hourly: bool) -> str:
    return (
        f"{label:<10} {fmt.usd(before, hourly=hourly)} → {fmt.usd(after, hourly=hourly)}  "
        f"({delta_usd(after - before, hourly=hourly)})"
    )


def _cluster_block(d: ClusterDelta, console: Console) -> None:
    style = STYLE[d.kind]
    console.print(f"[{style}]{SYMBOL[d.kind]}[/] [bold]{escape(d.cluster)}[/] ({d.kind})")
    if d.moved and d.kind == "changed":
        console.print(f"    from {escape(side_text(d.before))}", soft_wrap=True)
        console.print(f"    to   {escape(side_text(d.after))}", soft_wrap=True)
    else:
        console.print(f"    on {escape(side_text(d.after or d.before))}", soft_wrap=True)
    for note in d.notes:
        console.print(f"    {escape(note)}", soft_wrap=True)
    b, a = d.before or ClusterSide(), d.after or ClusterSide()
    if (b.hourly_cost, b.estimated_cost) == (a.hourly_cost, a.estimated_cost):
        console.print("    cost unchanged")
        return
    console.print("    " + _money_line("hourly", b.hourly_cost, a.hourly_cost, hourly=True))
    console.print(
        "    " + _money_line("estimated", b.estimated_cost, a.estimated_cost, hourly=False)
    )


def render_changes(cmp: PlanComparison, console: Console) -> None:
    """Cluster blocks, unchanged clusters, blocked/allowed placements, differing inputs, totals."""
    for d in cmp.changed_clusters:
        _cluster_block(d, console)
        console.print()
    unchanged = [d.cluster for d in cmp.clusters if d.kind == "unchanged"]
    if unchanged:
        console.print(f"Unchanged: {escape(', '.join(unchanged))}")
        console.print()
    if cmp.blocked:
        console.print("Blocked placements in the new plan:")
        for b in cmp.blocked:
            why = f" ({escape(b.reason)})" if b.reason else ""
            new = " [new]" if b in cmp.newly_blocked else ""
            console.print(f"  - {escape(b.describe())}{why}{escape(new)}")
        console.print()
    if cmp.allowed:
        console.print("The new plan allows only:")
        for a in cmp.allowed:
            why = f" ({escape(a.reason)})" if a.reason else ""
            console.print(f"  - {escape(a.describe())}{why}")
        console.print()
    if cmp.reasons:
        console.print("Made from different inputs:")
        for r in cmp.reasons:
            console.print(f"  - {escape(r.message)}", soft_wrap=True)
        console.print()
    t = cmp.totals
    console.print(_money_line("Hourly", t.hourly_before, t.hourly_after, hourly=True))
    console.print(_money_line("Estimated", t.estimated_before, t.estimated_after, hourly=False))
    if t.egress_before != t.egress_after:
        console.print(_money_line("Egress", t.egress_before, t.egress_after, hourly=False))


def render_diff(cmp: PlanComparison, console: Console) -> None:
    console.print(f"skyform cost diff {escape(cmp.old_label)} → {escape(cmp.new_label)}")
    console.print()
    if not cmp.changed_clusters:
        console.print("No cluster changed placement or cost.")
        console.print()
    render_changes(cmp, console)


def render_plan_check(check: PlanCheck, console: Console, *, plan_path: str, replan: str) -> None:
    """`plan --check`: one line when up to date; else why, what would change, how to fix."""
    cmp = check.comparison
    if check.up_to_date:
        console.print(
            f"[green]{escape(plan_path)} is up to date[/]: planning now writes exactly its bytes."
        )
        return
    console.print(
        f"[bold red]{escape(plan_path)} is out of date[/]: planning now writes a different plan."
    )
    console.print()
    if cmp.reasons:
        console.print("Why:")
        for r in cmp.reasons:
            console.print(f"  - {escape(r.message)}", soft_wrap=True)
        console.print()
    if cmp.changed_clusters:
        console.print("What would change:")
        console.print()
    for d in cmp.changed_clusters:
        _cluster_block(d, console)
        console.print()
    if cmp.totals_changed:
        t = cmp.totals
        console.print(_money_line("Hourly", t.hourly_before, t.hourly_after, hourly=True))
        console.print(_money_line("Estimated", t.estimated_before, t.estimated_after, hourly=False))
    elif cmp.changed_clusters:
        console.print("Total cost unchanged.")
    elif cmp.reasons:
        console.print("Placements, actions and costs are the same.")
    if check.raw_diff:
        console.print("The files differ only in these lines (edited or reformatted by hand?):")
        for line in check.raw_diff:
            console.print(f"  {escape(line)}", soft_wrap=True)
    console.print()
    console.print(f"Update it, review and commit: {escape(replan)}")


def policy_message(violations: list[Violation]) -> str:
    """One message for every exceeded limit, naming the clusters and their figures."""
    parts = []
    for v in violations:
        what = "hourly cost" if v.hourly else "estimated total"
        clusters = ", ".join(f"{name} {fmt.usd(x, hourly=v.hourly)}" for name, x in v.clusters)
        if v.egress:
            clusters += f"; egress {fmt.usd(v.egress)}"
        parts.append(
            f"{what} {fmt.usd(v.actual, hourly=v.hourly)} exceeds {v.option} "
            f"{fmt.usd(v.limit, hourly=v.hourly)} ({clusters})"
        )
    return "the plan breaks its cost policy: " + "; ".join(parts)
