"""The Typer app and the single boundary where errors become exit codes.

Command modules under `cli/commands/` register themselves on `app` (or on a sub-app)
when imported below. They must stay light at import time: `skyform --help` imports
every one of them, so heavy modules (pulumi, pulp, fabric, the catalog) are imported
inside the command functions.
"""

from __future__ import annotations

import copy
import os
import sys
import types

# skyform uses no pydantic plugins; looking them up scans every installed package's entry
# points the first time a model is built (tens of ms on every command).
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

import typer
from typer.main import get_command_name
from typer.models import CommandInfo

from skyform import __version__
from skyform.errors import Interrupted, SkyformError


def _skip_pydantic_plugin_loader() -> None:
    """With every plugin disabled, pydantic's plugin loader returns () without looking, yet
    importing it imports importlib.metadata (~10 ms, a tenth of a cold `plan`). Stand in
    for it with the answer it would give; if pydantic is already loaded, change nothing."""
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] != "__all__" or "pydantic" in sys.modules:
        return
    loader = types.ModuleType("pydantic.plugin._loader", "skyform: plugins are disabled")
    loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules.setdefault(loader.__name__, loader)


_skip_pydantic_plugin_loader()

app = typer.Typer(
    name="skyform",
    help="Plan and run compute jobs across clouds, declaratively.\n\n"
    "skyform plan task.yaml -o plan.json  ·  skyform apply plan.json",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"skyform {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Plan and run compute jobs across clouds, declaratively."""


def _register_commands() -> None:
    # Importing a command module registers its commands on `app`.
    from skyform.cli.commands import register_all

    register_all(app)


_register_commands()


def app_for(args: list[str]) -> typer.Typer:
    """`app` trimmed to the verb `args` name, when they name one: Typer turns every
    registered verb into a click command (signature inspection, every option) on each run,
    and one verb's is all a run needs. Usage lines and errors are the same, since each
    verb's command is built the same way; anything else (`skyform`, `--help`, an unknown
    or misspelt verb, which the full group's suggestions answer) gets the whole app."""
    if not args or args[0].startswith("-"):
        return app
    verb = args[0]
    commands = [c for c in app.registered_commands if _verb_name(c) == verb]
    groups = [g for g in app.registered_groups if g.name == verb]
    if not commands and not groups:
        return app
    trimmed = copy.copy(app)
    trimmed.registered_commands = commands
    trimmed.registered_groups = groups
    return trimmed


def _verb_name(command: CommandInfo) -> str | None:
    if command.name:
        return command.name
    callback = command.callback
    return None if callback is None else get_command_name(callback.__name__)


USAGE_EXIT = 1  # click uses 2 for usage errors; skyform keeps 2 for "plan has changes".


def run(argv: list[str] | None = None) -> int:
    """Console-script entry point: run the app, map every outcome to an exit code."""
    code = 0
    try:
        args = sys.argv[1:] if argv is None else argv
        result = app_for(args)(args=args, standalone_mode=False, prog_name="skyform")
        code = result if isinstance(result, int) else 0
    except SkyformError as err:
        _report(err)
        code = err.exit_code
    except (KeyboardInterrupt, typer.Abort):
        _report(Interrupted("Interrupted."))
        code = Interrupted.exit_code
    except typer.Exit as err:
        code = err.exit_code
    except typer.TyperException as err:  # usage errors from the (vendored) click parser
        err.show()  # type: ignore[attr-defined]
        raw = getattr(err, "exit_code", 1)
        code = USAGE_EXIT if raw == 2 else raw
    except Exception as err:  # a bug: say so in one line; the traceback is one env var away
        if os.environ.get("SKYFORM_DEBUG") == "1":
            raise
        _report(
            SkyformError(
                f"internal error: {type(err).__name__}: {err}",
                "This is a bug in skyform. Run again with SKYFORM_DEBUG=1 for the traceback "
                "and report it.",
            )
        )
        code = 1
    if argv is None:
        sys.exit(code)
    return code


def _report(err: SkyformError) -> None:
    from skyform.cli.render.errors import render_error

    render_error(err)
    if os.environ.get("SKYFORM_DEBUG") == "1" and err.__traceback__ is not None:
        import traceback

        traceback.print_exception(type(err), err, err.__traceback__, file=sys.stderr)


if __name__ == "__main__":
    run()
