"""`skyform state migrate --to URL`: move the state into another store (SQLite <-> PostgreSQL)."""

from __future__ import annotations

import typer

from skyform.cli.groups import verb_group

state_app, register = verb_group(
    "state",
    "The state store: move it between SQLite and PostgreSQL (team mode).",
)


@state_app.command("migrate")
def migrate(
    to: str = typer.Option(
        ..., "--to", metavar="URL", help="postgresql://user@host:port/db or sqlite:///path"
    ),
    source: str | None = typer.Option(
        None,
        "--from",
        metavar="URL",
        help="Default: this command's state (SKYFORM_STATE_URL, "
        "state.url in config.yaml, else SKYFORM_HOME/state.db).",
    ),
) -> None:
    """Copy every cluster, job, event, usage record, managed job and key into the empty
    store at URL, lineage and serial included (reviewed plans stay fresh). The old store is
    left as it was; a target that is not empty is refused."""
    from skyform.ops.state_admin import migrate as copy_into

    done = copy_into(to, source)
    moved = ", ".join(f"{n} {table}" for table, n in done.copied.items() if n) or "an empty state"
    typer.echo(f"Copied {moved} from {done.source} to {done.target}.")
    typer.echo(
        f"Point SKYFORM_STATE_URL (or state.url in config.yaml) at {done.target} from now on."
    )
