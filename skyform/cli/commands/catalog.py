"""`skyform catalog refresh|show`: the price catalog in use, and fetching a newer one."""

from __future__ import annotations

import typer

catalog_app = typer.Typer(
    name="catalog",
    help="Show the price catalog in use, or refresh it from SkyPilot's public catalog.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(catalog_app, name="catalog")


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
    from skyform.plan.catalog.refresh import DEFAULT_BASE_URL, refresh_catalog

    render_refresh(refresh_catalog(url or DEFAULT_BASE_URL), as_json=json_out)


@catalog_app.command("show")
def show(json_out: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Which catalog is in use (bundled or refreshed), where, its digest, size and age."""
    from skyform.cli.render.catalog import render_catalog_status
    from skyform.config import load_config
    from skyform.plan.catalog import load_catalog
    from skyform.plan.catalog.refresh import catalog_status

    render_catalog_status(catalog_status(load_catalog(load_config())), as_json=json_out)
