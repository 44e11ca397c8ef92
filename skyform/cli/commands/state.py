"""`skyform state migrate --to URL`: move the state into another store (SQLite <-> PostgreSQL)."""

from __future__ import annotations

import typer

state_app = typer.Typer(
    help="The state store: move it between SQLite and PostgreSQL (team mode).",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(state_app, name="state")


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
    from skyform.state.migrate import copy_state
    from skyform.state.store import open_state

    with open_state(url=source) as old, open_state(url=to) as new:
        copied = copy_state(old, new)
        where = new.url
        was = old.url
    moved = ", ".join(f"{n} {table}" for table, n in copied.items() if n) or "an empty state"
    typer.echo(f"Copied {moved} from {was} to {where}.")
    typer.echo(f"Point SKYFORM_STATE_URL (or state.url in config.yaml) at {where} from now on.")
