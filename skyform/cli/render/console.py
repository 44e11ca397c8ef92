"""Rich consoles for the CLI. Colour follows the terminal; NO_COLOR and COLUMNS are honoured.

Every string a console turns into text — a printed line, a table cell, a header — shows its
control characters as escapes first (render/visible.py): renderers print text from plans,
task files and nodes, and a terminal would act on them. Markup is the renderers' to escape
(`[bold]` in a name is text): they escape user text before they put it in markup."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich.console is imported by the first console made, not by this module
    from rich.console import Console

PIPE_WIDTH = 120  # rich assumes 80 columns when not on a terminal; tables need more


_SAFE: type[Console] | None = None


def _safe_console() -> type[Console]:
    """Console whose strings pass through `visible` before rich reads their markup (made on
    first use: rich is imported only when a console is)."""
    global _SAFE
    if _SAFE is None:
        from rich.console import Console
        from rich.text import Text

        from skyform.cli.render.visible import visible

        class SafeConsole(Console):
            def render_str(self, text: str, **kwargs: Any) -> Text:
                return super().render_str(visible(text), **kwargs)

        _SAFE = SafeConsole
    return _SAFE


def make_console(*, stderr: bool = False, width: int | None = None) -> Console:
    console_class = _safe_console()
    stream = sys.stderr if stderr else sys.stdout
    if width is None and not stream.isatty() and not os.environ.get("COLUMNS"):
        width = PIPE_WIDTH
    # emoji=False: user text (paths, commands) is printed as written — `root:x:0:0` must
    # not turn into `root❌0:0`; markup in it is escaped by the callers
    return console_class(file=stream, width=width, highlight=False, soft_wrap=False, emoji=False)


def plain_console(width: int = 100) -> Console:
    """No colour, fixed width: what golden tests render against."""
    import io

    console_class = _safe_console()
    return console_class(
        file=io.StringIO(),
        width=width,
        no_color=True,
        color_system=None,
        highlight=False,
        emoji=False,
        force_terminal=False,
        legacy_windows=False,
    )
