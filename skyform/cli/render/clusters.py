"""`status` and `queue` tables (SkyPilot's columns), and their --json forms."""

from __future__ import annotations

import time

from rich import box
from rich.markup import escape
from rich.table import Table

from skyform.cli.render.console import make_console
from skyform.cli.render.empty import NO_CLUSTERS
from skyform.cli.render.output import print_json
from skyform.cli.render.status_table import ago, cells, print_status_table
from skyform.cli.render.status_table import resources as offer_resources
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


def duration(start: float | None, end: float | None, now: float | None = None) -> str:
    if start is None:
        return "-"
    seconds = int((end or now or time.time()) - start)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h {m}m {s}s" if h else (f"{m}m {s}s" if m else f"{s}s")


def resources(record: ClusterRecord) -> str:
    return offer_resources(record.spec.offer, record.spec.num_nodes)


def _status_dict(r: ClusterRecord, jobs: list[JobRecord], health: ClusterState | None) -> dict:
    return {
        "name": r.name,
        **({"shown_as": r.spec.shown_as} if r.spec.shown_as else {}),
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
            cells(
                r.spec.shown_name,
                r.spec.offer,
                r.spec.num_nodes,
                state=state,
                autostop=r.spec.autostop.short if r.spec.autostop else "-",
                launched_at=r.launched_at,
                hourly_price=r.hourly_price,
            )
        )
    print_status_table(console, rows)
    hint = autostop_hint(records)
    if hint and not refreshed:  # SkyPilot's hint: the table is a local cache
        console.print(f"* {hint} Refresh statuses with: skyform status --refresh")
    if verbose:
        for r in records:
            _verbose(console, r, jobs.get(r.name, []), health.get(r.name))


def autostop_hint(records: list[ClusterRecord]) -> str | None:
    """How many clusters the table may show before their autostop acted (what `status
    --refresh` takes in), by what comes next: a stop, or a tear-down (`down: true`, or a
    stopped cluster's down timer). Not counted: `local` ones (their autostop is taken in on
    every `status`), a STOPPED one with nothing left to do, INIT and LOST ones (SkyPilot
    counts INIT, but no autostop agent acts before an apply has finished)."""
    stops = downs = 0
    for r in records:
        setting = r.spec.autostop
        if setting is None or r.spec.offer.cloud == "local":
            continue
        if r.status.value == "UP":
            stops += setting.stop_after is not None
            downs += setting.stop_after is None
        elif r.status.value == "STOPPED" and setting.down_after is not None:
            downs += 1
    total = stops + downs
    if not total:
        return None
    counted = f"{total} cluster{'s have' if total > 1 else ' has'}"
    if stops and downs:
        return f"{counted} autostop ({stops}) or autodown ({downs}) scheduled."
    return f"{counted} {'autostop' if stops else 'autodown'} scheduled."


def _verbose(console, r: ClusterRecord, jobs: list[JobRecord], h: ClusterState | None) -> None:
    console.print(
        f"\n[bold]{escape(r.spec.shown_name)}[/] from {escape(r.source or '-')}"
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
        console.print(f"  last job: {last.job_id} {escape(last.name)} {last.status.value}")


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
            f"skyform logs {escape(cluster)} {j.job_id}",
        )
    console.print(table)
    unstarted = [j for j in jobs if j.never_ran and j.reason]
    for j in unstarted[-3:]:  # why the latest jobs that never ran did not
        console.print(f"  job {j.job_id}: {escape(j.reason)}", soft_wrap=True)
