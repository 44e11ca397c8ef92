"""Rich consoles for the CLI. Colour follows the terminal; NO_COLOR and COLUMNS are honoured."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich.console is imported by the first console made, not by this module
    from rich.console import Console

PIPE_WIDTH = 120  # rich assumes 80 columns when not on a terminal; tables need more


def make_console(*, stderr: bool = False, width: int | None = None) -> Console:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if width is None and not stream.isatty() and not os.environ.get("COLUMNS"):
        width = PIPE_WIDTH
    # emoji=False: user text (paths, commands) is printed as written — `root:x:0:0` must
    # not turn into `root❌0:0`; markup in it is escaped by the callers
    return Console(file=stream, width=width, highlight=False, soft_wrap=False, emoji=False)


def plain_console(width: int = 100) -> Console:
    """No colour, fixed width: what golden tests render against."""
    import io

    from rich.console import Console

    return Console(
        file=io.StringIO(),
        width=width,
        no_color=True,
        color_system=None,
        highlight=False,
        emoji=False,
        force_terminal=False,
        legacy_windows=False,
    )
