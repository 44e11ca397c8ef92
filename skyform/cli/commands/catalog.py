"""`skyform catalog refresh|show`: the price catalog in use, and fetching a newer one."""

from __future__ import annotations

import typer

from skyform.cli.groups import verb_group

catalog_app, register = verb_group(
    "catalog",
    "Show the price catalog in use, or refresh it from SkyPilot's public catalog.",
)


@catalog_app.command("refresh")
def refresh(
    url: str = typer.Option(
        None,
        "--url",
        metavar="BASE",
        help="Base URL of a SkyPilot v8 catalog (BASE/aws/vms.csv, BASE/gcp/vms.csv). "
        "Default: SkyPilot's public catalog.",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Download AWS/GCP prices into SKYFORM_HOME/catalog, all or nothing (bundled = fallback)."""
    from skyform.cli.render.catalog import render_refresh
    from skyform.ops import catalog

    render_refresh(catalog.refresh(url), as_json=json_out)


@catalog_app.command("show")
def show(json_out: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Which catalog is in use (bundled or refreshed), where, its digest, size and age."""
    from skyform.cli.render.catalog import render_catalog_status
    from skyform.ops import catalog

    render_catalog_status(catalog.status(), as_json=json_out)
