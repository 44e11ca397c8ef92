"""`skyform catalog show` and `skyform catalog refresh` output."""

from __future__ import annotations

from rich.markup import escape

from skyform.cli.render.console import make_console
from skyform.cli.render.output import print_json
from skyform.plan.catalog.refresh import RefreshResult


def age(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def render_catalog_status(status: dict, *, as_json: bool, console=None) -> None:
    if as_json:
        print_json(status)
        return
    console = console or make_console()
    kind = status["kind"]
    console.print(f"[bold]Catalog in use:[/] {escape(kind)}  ({escape(status['path'])})")
    if status["url"]:
        console.print(f"  source:        {escape(status['url'])}")
    if status["fetched_at"]:
        fetched = f"{status['fetched_at']} ({age(status['age_seconds'])})"
        console.print(f"  fetched:       {escape(fetched)}")
    console.print(f"  digest:        {status['digest']}")
    console.print(f"  onprem digest: {status['onprem_digest']}")
    rows = ", ".join(f"{k} {v}" for k, v in status["rows"].items())
    console.print(f"  rows:          {escape(rows)}")
    offers = ", ".join(f"{k} {v}" for k, v in status["offers"].items())
    console.print(f"  offers:        {escape(offers)} (kubernetes: synthesised per request)")
    if status["warning"]:
        console.print(f"[yellow]warning:[/] {escape(status['warning'])}")
    if kind == "bundled":
        console.print("\nUpdate prices with `skyform catalog refresh`.")


def render_refresh(result: RefreshResult, *, as_json: bool, console=None) -> None:
    if as_json:
        print_json(
            {"path": result.path, "url": result.url, "files": result.files,
             "fetched_at": result.fetched_at}
        )  # fmt: skip
        return
    console = console or make_console()
    console.print(f"Refreshed the catalog from {escape(result.url)} into {escape(result.path)}:")
    for name, rows in result.files.items():
        console.print(f"  {escape(name)}: {rows} rows")
    console.print("Bundled data still covers GCP accelerator hosts, Kubernetes and egress.")
