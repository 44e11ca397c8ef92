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
    from skyform.config import load_config
    from skyform.errors import CatalogError, NoOffersError
    from skyform.infra import NAMES
    from skyform.plan.catalog import load_catalog
    from skyform.plan.catalog.listing import gpu_rows, gpu_summary, parse_gpu_filter

    if name == "list":  # `sky gpus list [NAME]`
        name, listed = listed, None
    if listed is not None:
        raise CatalogError(f"one accelerator at a time, got {name!r} and {listed!r}")
    for c in cloud or []:
        if c not in NAMES:
            raise CatalogError(f"Unknown cloud {c!r}.", hint=f"Use one of: {', '.join(NAMES)}.")
    catalog = load_catalog(load_config())
    clouds = list(cloud) if cloud else _default_clouds(catalog)
    if name is None:
        render_gpu_summary(gpu_summary(catalog, clouds=clouds, region=region), as_json=json_out)
        return
    try:
        wanted, count = parse_gpu_filter(name)
    except ValueError:
        raise CatalogError(
            f"Bad accelerator filter {name!r}: the count after ':' must be a positive number.",
            hint="Write NAME or NAME:COUNT, e.g. `skyform gpus A100:8`.",
        ) from None
    canonical = catalog.canonical_accelerator(wanted)
    if canonical is None:
        close = catalog.suggest_accelerators(wanted)
        hint = f"Did you mean: {', '.join(close)}? " if close else ""
        raise CatalogError(
            f"Unknown accelerator {wanted!r}.", hint=hint + "Run `skyform gpus` to list them all."
        )
    rows = gpu_rows(
        catalog, canonical, count=count, clouds=clouds, region=region, all_regions=all_regions
    )
    if not rows:
        raise NoOffersError(_nothing_found(catalog, canonical, count, clouds, region))
    render_gpu_rows(rows, as_json=json_out)


def _default_clouds(catalog) -> list[str]:
    """The price-catalog clouds, plus ssh pools and this machine when they have accelerators."""
    clouds = list(catalog.default_clouds)
    from skyform.infra import ON_PREM

    onprem = catalog.query(clouds=list(ON_PREM), min_accelerator_count=0.0001)
    return clouds + sorted({o.cloud for o in onprem})


def _nothing_found(catalog, name: str, count, clouds: list[str], region) -> str:
    what = f"{name}:{count:g}" if count else name
    where = f" in {region}" if region else ""
    elsewhere = catalog.accelerator_clouds(name)
    text = f"No {what} offers on {', '.join(clouds)}{where}."
    if elsewhere:
        text += f" SkyPilot's catalog lists {name} on: {', '.join(elsewhere)}."
    return text
