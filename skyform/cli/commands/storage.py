"""`skyform storage ls|delete`: the buckets skyform created (SkyPilot's `sky storage`)."""

from __future__ import annotations

import typer

from skyform.cli import options
from skyform.cli.groups import verb_group

storage_app, register = verb_group("storage", "Buckets skyform created for file_mounts.")


@storage_app.command("ls")
def ls(
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    sizes: bool = typer.Option(False, "--size", help="Also read each bucket's size."),
) -> None:
    """List the buckets skyform created: store, region, who uses them."""
    from skyform.cli.render.storage import render_buckets
    from skyform.ops.storage import list_storage

    render_buckets(list_storage(sizes=sizes), as_json=json_out)


@storage_app.command("delete")
def delete(
    names: list[str] = typer.Argument(None, help="Bucket names (globs allowed)."),
    every: bool = typer.Option(False, "--all", "-a", help="Every bucket skyform created."),
    yes: bool = options.YES,
) -> None:
    """Delete buckets skyform created (with their objects). Refuses one a live cluster uses."""
    from skyform.cli.prompts import confirm
    from skyform.cli.render.console import make_console
    from skyform.ops.storage import delete_storage, storage_to_delete

    records = storage_to_delete(list(names or []), every=every)
    console = make_console()
    if not records:
        console.print("No existing storage.")
        return
    confirm(f"Delete {', '.join(r.uri for r in records)} and everything in them?", yes)
    for line in delete_storage(records):
        console.print(line)
