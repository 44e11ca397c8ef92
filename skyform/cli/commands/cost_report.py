"""`skyform cost-report`: what applied clusters and managed jobs actually cost."""

from __future__ import annotations

import typer

from skyform.cli import options


def register(app: typer.Typer) -> None:
    app.command("cost-report")(cost_report)


def cost_report(
    days: float = typer.Option(
        30, "--days", min=0, help="Only uptime in the last N days (0: all recorded usage)."
    ),
    json_out: bool = options.JSON,
    csv_out: bool = typer.Option(False, "--csv", help="One CSV row per usage interval."),
) -> None:
    """Recorded price × recorded uptime per cluster and per managed job (recoveries included)."""
    import time

    from skyform.cli.render.cost import emit
    from skyform.cli.render.cost_report import render_cost_report, render_cost_report_csv
    from skyform.cost.usage import usage_report
    from skyform.errors import SkyformError
    from skyform.state.db import open_state, state_exists
    from skyform.state.managed import ManagedJobs

    if json_out and csv_out:
        raise SkyformError("--json and --csv are exclusive: pick one output format")
    now = time.time()
    since = now - days * 86400 if days else None
    intervals, live, names, statuses, recoveries = [], {}, {}, {}, {}
    if state_exists():
        with open_state() as db:
            intervals = db.usage(since=since)
            live = {r.name: r.status.value for r in db.list_clusters()}
            for job in ManagedJobs(db).list():
                names[job.id], statuses[job.id] = job.name, job.status.value
                recoveries[job.id] = job.recoveries()
    report = usage_report(
        intervals,
        now=now,
        since=since,
        cluster_status=live,
        job_names=names,
        job_status=statuses,
        job_recoveries=recoveries,
    )
    text = render_cost_report_csv(report) if csv_out else None
    emit(report, render_cost_report, as_json=json_out, text=text)
