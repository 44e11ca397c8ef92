"""`status` and `queue` tables (SkyPilot's columns), and their --json forms."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich import box
from rich.markup import escape
from rich.table import Table

from skyform.cli.render import fmt
from skyform.cli.render.console import make_console
from skyform.cli.render.empty import NO_CLUSTERS
from skyform.cli.render.fasttable import print_table
from skyform.cli.render.output import print_json
from skyform.stacks.engine import ClusterState
from skyform.state.models import ClusterRecord, JobRecord, JobStatus

JOB_STYLE = {
    JobStatus.SUCCEEDED: "green",
    JobStatus.RUNNING: "cyan",
    JobStatus.SETTING_UP: "cyan",
    JobStatus.FAILED: "red",
    JobStatus.FAILED_SETUP: "red",
    JobStatus.CANCELLED: "yellow",
}


STATUS_COLUMNS = ("NAME", "INFRA", "RESOURCES", "STATUS", "AUTOSTOP", "LAUNCHED", "COST/hr")


def ago(ts: float | None, now: float | None = None) -> str:
    if ts is None:
        return "-"
    seconds = max(0, int((now or time.time()) - ts))
    for unit, size in (("day", 86400), ("hr", 3600), ("min", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n > 1 else ''} ago"
    return f"{seconds} sec{'s' if seconds != 1 else ''} ago" if seconds else "just now"


def duration(start: float | None, end: float | None, now: float | None = None) -> str:
    if start is None:
        return "-"
    seconds = int((end or now or time.time()) - start)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h {m}m {s}s" if h else (f"{m}m {s}s" if m else f"{s}s")


def resources(record: ClusterRecord) -> str:
    o = record.spec.offer
    inside = [
        f"{fmt.number(o.vcpus)} vCPU" if o.vcpus else None,
        f"{fmt.number(o.memory_gib)} GB" if o.memory_gib else None,
        fmt.gpus(o) if o.accelerator else None,
    ]
    detail = ", ".join(p for p in inside if p)
    return f"{record.spec.num_nodes}x {fmt.instance(o)}" + (f" ({detail})" if detail else "")


def _status_dict(r: ClusterRecord, jobs: list[JobRecord], health: ClusterState | None) -> dict:
    return {
        "name": r.name,
        "status": r.status.value,
        "infra": r.spec.offer.infra,
        "resources": resources(r),
        "launched_at": r.launched_at,
        "source": r.source,
        "hourly_cost": round(r.hourly_price * r.spec.num_nodes, 6),
        "autostop": r.spec.autostop.model_dump(mode="json") if r.spec.autostop else None,
        "stopped_at": r.stopped_at,
        "engine": r.handle.engine if r.handle else None,
        "stack": r.handle.stack if r.handle else None,
        "nodes": [n.model_dump(mode="json") for n in (r.handle.nodes if r.handle else [])],
        "health": health.model_dump(mode="json") if health else None,
        "jobs": [j.model_dump(mode="json") for j in jobs],
    }


def status_table(rows: Sequence[Sequence[str]]) -> Table:
    """The status table as rich lays it out (RESOURCES wraps when the console is narrow)."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in STATUS_COLUMNS:
        table.add_column(col, no_wrap=col != "RESOURCES")
    for row in rows:
        table.add_row(*map(escape, row))
    return table


def render_status(
    records: list[ClusterRecord],
    jobs: dict[str, list[JobRecord]],
    health: dict[str, ClusterState],
    *,
    verbose: bool,
    as_json: bool,
    notes: list[str] | None = None,
    refreshed: bool = False,
) -> None:
    if as_json:
        print_json([_status_dict(r, jobs.get(r.name, []), health.get(r.name)) for r in records])
        return
    console = make_console()
    for note in notes or []:  # what autostop did since the last look
        console.print(escape(note), soft_wrap=True)
    if not records:
        console.print(NO_CLUSTERS)
        return
    rows = []
    for r in records:
        state = r.status.value
        h = health.get(r.name)
        if h is not None and not h.all_alive:
            lost = [str(n.rank) for n in h.nodes if not n.alive]
            state += f" (node {', '.join(lost)} lost)" if lost else " (gone)"
        rows.append(
            (
                r.name,
                r.spec.offer.infra,
                resources(r),
                state,
                r.spec.autostop.short if r.spec.autostop else "-",
                ago(r.launched_at),
                fmt.usd(r.hourly_price * r.spec.num_nodes, hourly=True),
            )
        )
    if not print_table(console, STATUS_COLUMNS, rows):  # too wide: rich wraps RESOURCES
        console.print(status_table(rows))
    scheduled = [
        r
        for r in records
        if r.spec.autostop and r.status.value == "UP" and r.spec.offer.cloud != "local"
    ]
    if scheduled and not refreshed:  # SkyPilot's hint: the table is a local cache
        console.print(
            f"* {len(scheduled)} cluster(s) have autostop scheduled. "
            "Refresh statuses with: skyform status --refresh"
        )
    if verbose:
        for r in records:
            _verbose(console, r, jobs.get(r.name, []), health.get(r.name))


def _verbose(console, r: ClusterRecord, jobs: list[JobRecord], h: ClusterState | None) -> None:
    console.print(
        f"\n[bold]{escape(r.name)}[/] from {escape(r.source or '-')}"
        + (f", stack {escape(r.handle.stack)}" if r.handle and r.handle.stack else "")
    )
    alive = {n.rank: n for n in h.nodes} if h else {}
    for node in r.handle.nodes if r.handle else []:
        where = node.root if node.root else f"{node.user or ''}@{node.host}:{node.port}"
        state = alive.get(node.rank)
        mark = "" if state is None else (" alive" if state.alive else f" LOST {state.detail}")
        console.print(f"  node {node.rank}: {escape(where)} ({escape(node.node_id)}){mark}")
    last = jobs[-1] if jobs else None
    if last is not None:
        console.print(f"  last job: {last.job_id} {last.name} {last.status.value}")


def render_queues(
    queues: list[tuple[str, list[JobRecord]]], *, as_json: bool, headings: bool = True
) -> None:
    """One table per cluster (a heading above each when several may be shown); --json is
    one list of every job (each names its cluster)."""
    if as_json:
        print_json([j.model_dump(mode="json") for _, jobs in queues for j in jobs])
        return
    console = make_console()
    if not queues:
        console.print(NO_CLUSTERS)
    for i, (cluster, jobs) in enumerate(queues):
        if headings:
            console.print(("\n" if i else "") + f"Job queue of cluster [bold]{escape(cluster)}[/]")
        _queue_table(console, cluster, jobs)


def _queue_table(console, cluster: str, jobs: list[JobRecord]) -> None:
    if not jobs:
        console.print(f"No jobs on cluster {escape(cluster)}.")
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in ("ID", "NAME", "SUBMITTED", "STARTED", "DURATION", "RESOURCES", "STATUS", "LOG"):
        table.add_column(col, no_wrap=True)
    for j in reversed(jobs):
        style = JOB_STYLE.get(j.status, "white")
        table.add_row(
            str(j.job_id),
            escape(j.name),
            ago(j.submitted_at),
            ago(j.started_at),
            duration(j.started_at, j.ended_at),
            escape(j.resources),
            f"[{style}]{j.status.value}[/]",
            f"skyform logs {cluster} {j.job_id}",
        )
    console.print(table)
    unstarted = [j for j in jobs if j.never_ran and j.reason]
    for j in unstarted[-3:]:  # why the latest jobs that never ran did not
        console.print(f"  job {j.job_id}: {escape(j.reason)}", soft_wrap=True)
