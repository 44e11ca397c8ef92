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
    from skyform.cli.render.cost import emit
    from skyform.cli.render.cost_report import render_cost_report, render_cost_report_csv
    from skyform.errors import SkyformError
    from skyform.ops.cost import usage

    if json_out and csv_out:
        raise SkyformError("--json and --csv are exclusive: pick one output format")
    report = usage(days)
    text = render_cost_report_csv(report) if csv_out else None
    emit(report, render_cost_report, as_json=json_out, text=text)
