"""How an outcome that is not Typer's becomes an exit code: a SkyformError is reported and
exits with its code, Ctrl-C is Interrupted, anything else is a bug said in one line (the
traceback is one env var away). Typer-free, so the fast paths (cli/fastpath.py) share it
with the app (cli/main.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from skyform.errors import Interrupted, SkyformError


def guarded(action: Callable[[], object]) -> int:
    """Run `action`; its exit code (an int it returns, else 0) or the reported error's."""
    try:
        result = action()
    except SkyformError as err:
        report(err)
        return err.exit_code
    except KeyboardInterrupt:
        report(Interrupted("Interrupted."))
        return Interrupted.exit_code
    except Exception as err:
        return report_bug(err)
    finally:
        say_notices()
    return result if isinstance(result, int) else 0


def say_notices() -> None:
    """What the command noticed about the folders it used (paths.warn_if_shared), once
    each, on stderr after its output; plain text, so the fast paths load no rich."""
    from skyform.paths import take_notices

    for notice in take_notices():
        sys.stderr.write(f"Warning: {notice}\n")


def report_bug(err: Exception) -> int:
    """A bug: say so in one line (SKYFORM_DEBUG=1 re-raises for the traceback); exit 1."""
    if os.environ.get("SKYFORM_DEBUG") == "1":
        raise err
    report(
        SkyformError(
            f"internal error: {type(err).__name__}: {err}",
            "This is a bug in skyform. Run again with SKYFORM_DEBUG=1 for the traceback "
            "and report it.",
        )
    )
    return 1


def report(err: SkyformError) -> None:
    from skyform.cli.render.errors import render_error

    render_error(err)
    if os.environ.get("SKYFORM_DEBUG") == "1" and err.__traceback__ is not None:
        import traceback

        traceback.print_exception(type(err), err, err.__traceback__, file=sys.stderr)
