"""Rich consoles for the CLI. Colour follows the terminal; NO_COLOR and COLUMNS are honoured."""

from __future__ import annotations

import sys

from rich.console import Console


def make_console(*, stderr: bool = False, width: int | None = None) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


def plain_console(width: int = 100) -> Console:
    """No colour, fixed width: what golden tests render against."""
    import io

    return Console(
        file=io.StringIO(), width=width, no_color=True, color_system=None,
        highlight=False, force_terminal=False, legacy_windows=False,
    )
