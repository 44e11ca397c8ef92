"""`skyform storage ls|delete`: the buckets skyform created (SkyPilot's `sky storage`)."""

from __future__ import annotations

import typer

from skyform.cli import options

storage_app = typer.Typer(help="Buckets skyform created for file_mounts.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(storage_app, name="storage")


@storage_app.command("ls")
def ls(
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    sizes: bool = typer.Option(False, "--size", help="Also read each bucket's size."),
) -> None:
    """List the buckets skyform created: store, region, who uses them."""
    from skyform.cli.render.storage import render_buckets
    from skyform.config import load_config
    from skyform.ops.storage import bucket_rows
    from skyform.state.db import open_state

    with open_state() as db:
        rows = bucket_rows(db, load_config(), sizes=sizes)
    render_buckets(rows, as_json=json_out)


@storage_app.command("delete")
def delete(
    names: list[str] = typer.Argument(None, help="Bucket names (globs allowed)."),
    every: bool = typer.Option(False, "--all", "-a", help="Every bucket skyform created."),
    yes: bool = options.YES,
) -> None:
    """Delete buckets skyform created (with their objects). Refuses one a live cluster uses."""
    from skyform.cli.prompts import confirm
    from skyform.cli.render.console import make_console
    from skyform.config import load_config
    from skyform.ops.storage import delete_buckets, refuse_in_use, select
    from skyform.state.db import open_state

    with open_state() as db:
        records = select(db, list(names or []), every=every)
        console = make_console()
        if not records:
            console.print("No existing storage.")
            return
        refuse_in_use(db, records)
        confirm(f"Delete {', '.join(r.uri for r in records)} and everything in them?", yes)
        for line in delete_buckets(db, load_config(), records):
            console.print(line)
