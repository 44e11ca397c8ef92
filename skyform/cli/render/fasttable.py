"""A table as `status` and `queue` print it (rich's SIMPLE_HEAD box, no outer edge, no edge
padding), written as plain lines: rich lays out a thousand-row table in seconds, this in
milliseconds. The text is what rich prints when every row fits the console's width; when one
does not, `print_table` returns False and the caller lets rich wrap the table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from skyform.cli.render.lines import table_lines

if TYPE_CHECKING:
    from rich.console import Console

GAP = "   "  # right padding, the box's column separator, left padding


def status_table_lines(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int
) -> list[str] | None:
    """The table's lines, or None when it is wider than `width` (rich would wrap it)."""
    from rich.cells import cell_len

    def cells(text: str) -> int:  # ASCII: a character a cell
        return len(text) if text.isascii() else cell_len(text)

    return table_lines(headers, rows, width, gap=GAP, measure=cells)


def print_table(console: Console, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> bool:
    """Print the table as rich would (False, nothing printed: it does not fit; use rich)."""
    found = status_table_lines(headers, rows, console.width)
    if found is None:
        return False
    head, rule, *body = found
    if not console.is_terminal:  # no styles: exactly the text rich writes
        console.file.write("\n".join(found) + "\n")
        return True
    from rich.text import Text

    console.print(Text(head, style="table.header"), soft_wrap=True)
    console.print(Text("\n".join([rule, *body])), soft_wrap=True)
    return True
