"""`skyform cost-report`: recorded cost per cluster and per managed job (SkyPilot's columns)."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timezone

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from skyform.cli.render import fmt
from skyform.cli.render.status_table import ago
from skyform.cost.model import UsageReport, UsageRow
from skyform.plan.model import PlacedOffer

STATUS_STYLE = {"UP": "green", "INIT": "yellow", "TERMINATED": "dim"}


def span(seconds: float) -> str:
    """`2h 5m 3s`, `5m 3s`, `3s` (as `skyform queue` shows durations)."""
    total = int(seconds)
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h {m}m {s}s" if h else (f"{m}m {s}s" if m else f"{s}s")


def resources(offer: PlacedOffer, nodes: int) -> str:
    """`2x aws/us-east-1/use1-az4 g5.xlarge [Spot]`; `1x local` for this machine."""
    where = offer.infra if offer.cloud == "local" else f"{offer.infra} {fmt.instance(offer)}"
    return f"{nodes}x {where}"


def _table(rows: list[UsageRow], now: float, *, jobs: bool) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    columns = ["NAME", "LAUNCHED", "DURATION", "RESOURCES", "STATUS", "COST/hr", "COST"]
    if jobs:
        columns.insert(0, "ID")
        columns.insert(4, "RECOVERIES")
    for col in columns:
        right = col in ("COST/hr", "COST", "ID", "RECOVERIES")
        table.add_column(
            col,
            no_wrap=col != "RESOURCES",
            overflow="fold",
            justify="right" if right else "left",
        )
    for r in rows:
        cells = [
            escape(r.name),
            ago(r.launched_at, now),
            span(r.seconds),
            escape(resources(r.offer, r.num_nodes)),
            f"[{STATUS_STYLE.get(r.status, 'white')}]{escape(r.status)}[/]",
            fmt.usd(r.hourly_cost, hourly=True),
            fmt.usd(r.cost),
        ]
        if jobs:
            cells.insert(0, str(r.managed_job_id))
            cells.insert(4, str(r.recoveries))
        table.add_row(*cells)
    return table


def window_text(report: UsageReport) -> str:
    if report.since is None:
        return "all recorded usage"
    days = (report.now - report.since) / 86400
    return f"the last {days:g} day{'s' if days != 1 else ''}"


def render_cost_report(report: UsageReport, console: Console) -> None:
    if not report.clusters:
        console.print(f"No cluster usage recorded in {window_text(report)}.")
        return
    console.print(f"Clusters ({window_text(report)}):")
    console.print(_table(report.clusters, report.now, jobs=False))
    if report.managed_jobs:
        console.print()
        console.print("Managed jobs (every recovery included):")
        console.print(_table(report.managed_jobs, report.now, jobs=True))
    console.print()
    console.print(f"[bold]Total cost: {fmt.usd(report.total_cost)}[/]")
    console.print(
        "Recorded hourly price at apply × recorded uptime; clusters still up count until now."
    )


CSV_COLUMNS = (
    "interval",
    "cluster",
    "managed_job_id",
    "reason",
    "cloud",
    "region",
    "zone",
    "instance_type",
    "spot",
    "nodes",
    "hourly_cost",
    "started_at",
    "ended_at",
    "seconds",
    "cost",
)


def iso_time(seconds: float) -> str:
    """`2026-12-04T22:41:03.250Z`: what spreadsheets and `date -d` read (milliseconds kept)."""
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def render_cost_report_csv(report: UsageReport) -> str:
    """One row per usage interval (the ledger the tables sum up); times in ISO 8601, UTC."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in report.clusters:
        for iv in row.intervals:
            o = iv.offer
            writer.writerow(
                [
                    iv.id,
                    iv.cluster,
                    "" if iv.managed_job_id is None else iv.managed_job_id,
                    iv.reason,
                    o.cloud,
                    o.region,
                    o.zone or "",
                    o.instance_type,
                    "true" if o.spot else "false",
                    iv.num_nodes,
                    fmt.plain(iv.hourly_cost),
                    iso_time(iv.started_at),
                    "" if iv.ended_at is None else iso_time(iv.ended_at),
                    f"{iv.seconds:.3f}",
                    f"{iv.cost:.6f}",
                ]
            )
    return out.getvalue()
