"""The Typer app and the single boundary where errors become exit codes.

Command modules under `cli/commands/` register themselves on `app` (or on a sub-app)
when imported below. They must stay light at import time: `skyform --help` imports
every one of them, so heavy modules (pulumi, pulp, fabric, the catalog) are imported
inside the command functions.
"""

from __future__ import annotations

import copy
import sys

from skyform.cli.startup import skip_pydantic_plugins

skip_pydantic_plugins()  # before any model is built

import typer  # noqa: E402
from typer.main import get_command_name  # noqa: E402
from typer.models import CommandInfo  # noqa: E402

from skyform import __version__  # noqa: E402
from skyform.cli.outcome import report, report_bug, say_notices  # noqa: E402
from skyform.errors import Interrupted, SkyformError  # noqa: E402

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
        report(err)
        code = err.exit_code
    except (KeyboardInterrupt, typer.Abort):
        report(Interrupted("Interrupted."))
        code = Interrupted.exit_code
    except typer.Exit as err:
        code = err.exit_code
    except typer.TyperException as err:  # usage errors from the (vendored) click parser
        err.show()  # type: ignore[attr-defined]
        raw = getattr(err, "exit_code", 1)
        code = USAGE_EXIT if raw == 2 else raw
    except Exception as err:  # a bug: said in one line (cli/outcome.py)
        code = report_bug(err)
    say_notices()
    if argv is None:
        sys.exit(code)
    return code


if __name__ == "__main__":
    run()
