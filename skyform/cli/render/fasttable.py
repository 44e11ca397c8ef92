"""A table as `status` and `queue` print it (rich's SIMPLE_HEAD box, no outer edge, no edge
padding), written as plain lines: rich lays out a thousand-row table in seconds, this in
milliseconds. The text is what rich prints when every row fits the console's width; when one
does not, `print_table` returns False and the caller lets rich wrap the table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

GAP = "   "  # right padding, the box's column separator, left padding


def table_lines(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int
) -> list[str] | None:
    """The table's lines, or None when it is wider than `width` (rich would wrap it)."""
    from rich.cells import cell_len

    def cells(row: Sequence[str]) -> list[tuple[str, int]]:  # ASCII: a character a cell
        return [(c, len(c) if c.isascii() else cell_len(c)) for c in row]

    measured = [cells(headers), *(cells(r) for r in rows)]
    widths = [0] * len(headers)
    for row in measured:
        for i, (_, n) in enumerate(row):
            if n > widths[i]:
                widths[i] = n
    total = sum(widths) + len(GAP) * (len(widths) - 1)
    if total > width:
        return None

    def line(row: list[tuple[str, int]]) -> str:
        return GAP.join(c + " " * (w - n) for (c, n), w in zip(row, widths, strict=True))

    head, *body = (line(r) for r in measured)
    return [head, "─" * total, *body]


def print_table(console: Console, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> bool:
    """Print the table as rich would (False, nothing printed: it does not fit; use rich)."""
    found = table_lines(headers, rows, console.width)
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
