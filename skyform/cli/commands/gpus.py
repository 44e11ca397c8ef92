"""`skyform gpus [NAME[:COUNT]]`: which accelerators the catalog offers, where, at what price."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("gpus")(gpus)
    # SkyPilot's older name (`sky show-gpus`), with the same flags.
    app.command("show-gpus", help="The same as `skyform gpus` (SkyPilot's `sky show-gpus`).")(gpus)


def gpus(
    name: str | None = typer.Argument(
        None,
        metavar="[list] [NAME[:COUNT]]",
        help="Accelerator, e.g. A100 or A100:8 (exact count). `gpus list A100` (SkyPilot's "
        "`sky gpus list`) is the same as `gpus A100`.",
    ),
    listed: str | None = typer.Argument(None, hidden=True),
    cloud: list[str] = typer.Option(
        None, "--cloud", help="Only this cloud (repeatable): aws, gcp, kubernetes, local, ssh."
    ),
    region: str = typer.Option(None, "--region", help="Only this region."),
    all_regions: bool = typer.Option(
        False, "--all-regions", "--all", help="One row per region, not the cheapest."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON list of objects."),
) -> None:
    """List accelerators (like `sky show-gpus`): a summary, or NAME's instance types and prices."""
    from skyform.cli.render.gpus import render_gpu_rows, render_gpu_summary
    from skyform.errors import CatalogError
    from skyform.infra import NAMES
    from skyform.ops import catalog

    if name == "list":  # `sky gpus list [NAME]`
        name, listed = listed, None
    if listed is not None:
        raise CatalogError(f"one accelerator at a time, got {name!r} and {listed!r}")
    for c in cloud or []:
        if c not in NAMES:
            raise CatalogError(f"Unknown cloud {c!r}.", hint=f"Use one of: {', '.join(NAMES)}.")
    clouds = list(cloud) if cloud else None
    if name is None:
        render_gpu_summary(catalog.accelerators(clouds, region), as_json=json_out)
        return
    rows = catalog.accelerator_offers(name, clouds, region, all_regions=all_regions)
    render_gpu_rows(rows, as_json=json_out)
