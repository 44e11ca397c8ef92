"""Plain text, byte for byte what rich prints, without importing rich (~60 ms of a cold
`plan` or `show`): the renderers print through a `Printer`; `PlainPrinter` answers the
common case — output that is not a terminal, lines that fit, tables that fit, ASCII text —
and raises `NeedsRich` for anything else (a terminal's colours, a line rich would wrap, a
table it would fold, a character whose width rich measures), so the caller renders the
same calls again with `RichPrinter`. What is printed is the same either way; only the cost
differs. tests/plan/test_plain_printer.py compares the two on every golden plan."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from skyform.cli.render.visible import visible

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

Justify = Literal["left", "right", "center"]
# the markup the plan renderers write around their own words (user text is escaped)
STYLE_TAG = re.compile(r"\[(?:/|bold|green|yellow|magenta|red)\]")
# characters rich counts as one cell and prints as they are, besides printable ASCII
NARROW = frozenset("✔→·─…×")
# rich's own escape (rich.markup.escape), here so that escaping needs no rich
_ESCAPE = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def escape(markup: str) -> str:
    """Text made safe to print as rich markup (what rich.markup.escape returns)."""
    markup = _ESCAPE.sub(lambda m: f"{m.group(1)}{m.group(1)}\\{m.group(2)}", markup)
    if markup.endswith("\\") and not markup.endswith("\\\\"):
        return markup + "\\"
    return markup


class NeedsRich(Exception):
    """What was printed needs rich's measuring, wrapping or colour: render with RichPrinter."""


@dataclass
class Grid:
    """A table as rich.Table(box=SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=0)
    draws it: a header, a rule, rows; columns one space apart. Cells are plain text."""

    columns: list[tuple[str, Justify]]
    rows: list[list[str]] = field(default_factory=list)
    folds: str | None = None  # the column that folds onto more lines when the table is wide


class Printer(Protocol):
    def line(self, text: str = "", *, markup: bool = True, soft_wrap: bool = False) -> None: ...
    def grid(self, grid: Grid) -> None: ...


class PlainPrinter:
    def __init__(self, width: int) -> None:
        self.width = width
        self.parts: list[str] = []

    def line(self, text: str = "", *, markup: bool = True, soft_wrap: bool = False) -> None:
        text = visible(text)  # as the rich console shows it (console.py)
        if markup:
            text = STYLE_TAG.sub("", text)
            if "[" in text or "\\" in text:  # escaped user text: rich unescapes it
                raise NeedsRich(text)
        for row in text.split("\n"):
            _check(row)
            if not soft_wrap and len(row) > self.width:
                raise NeedsRich(row)
        self.parts.append(text + "\n")

    def grid(self, grid: Grid) -> None:
        header = [name for name, _ in grid.columns]
        for cells in [header, *grid.rows]:  # a control character: rich's path shows it
            for cell in cells:
                _check(cell)
        justify = [j for _, j in grid.columns]
        found = table_lines(header, grid.rows, self.width, justify=justify, gap=" ")
        if found is None:
            raise NeedsRich("table wider than the console")
        self.parts += [line + "\n" for line in found]

    def text(self) -> str:
        return "".join(self.parts)


def _check(text: str) -> None:
    if not all(" " <= c <= "~" or c in NARROW for c in text):
        raise NeedsRich(text)


def table_lines(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    justify: Sequence[Justify] | None = None,
    gap: str = " ",
    measure: Callable[[str], int] = len,
) -> list[str] | None:
    """A SIMPLE_HEAD table (no outer edge, no edge padding) as rich draws it when it fits:
    header, rule, rows, columns `gap` apart (rich's padding and separator), every cell padded
    to its column; None when it is wider than `width` (rich would wrap or fold it).
    `measure` is a cell's width in terminal cells."""
    measured = [[(c, measure(c)) for c in row] for row in [header, *rows]]
    widths = [0] * len(header)
    for row in measured:
        for i, (_, n) in enumerate(row):
            widths[i] = max(widths[i], n)
    total = sum(widths) + len(gap) * (len(widths) - 1)
    if total > width:
        return None
    how = list(justify or ["left"] * len(header))

    def line(row: list[tuple[str, int]]) -> str:
        out = []
        for (cell, n), w, j in zip(row, widths, how, strict=True):
            room = w - n
            if j == "right":
                out.append(" " * room + cell)
            elif j == "center":
                out.append(" " * (room // 2) + cell + " " * (room - room // 2))
            else:
                out.append(cell + " " * room)
        return gap.join(out)

    head, *body = (line(r) for r in measured)
    return [head, "─" * total, *body]


class RichPrinter:
    def __init__(self, console: Console) -> None:
        self.console = console

    def line(self, text: str = "", *, markup: bool = True, soft_wrap: bool = False) -> None:
        if markup:
            self.console.print(text, soft_wrap=soft_wrap)
        else:
            self.console.print(text, soft_wrap=soft_wrap, markup=False, highlight=False)

    def grid(self, grid: Grid) -> None:
        self.console.print(rich_table(grid))


def rich_table(grid: Grid) -> Table:
    from rich import box
    from rich.markup import escape as rich_escape
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=0)
    for name, justify in grid.columns:
        table.add_column(name, justify=justify, no_wrap=name != grid.folds, overflow="fold")
    for row in grid.rows:
        table.add_row(*(rich_escape(cell) for cell in row))
    return table


def plain_width() -> int | None:
    """The width rich would give stdout when that is no terminal and draws no colour; None
    when stdout is a terminal or the environment asks rich for colour or a width it reads."""
    env = os.environ
    if sys.stdout.isatty() or env.get("FORCE_COLOR") or env.get("TTY_COMPATIBLE"):
        return None
    columns = env.get("COLUMNS")
    if columns is None:
        from skyform.cli.render.console import PIPE_WIDTH

        return PIPE_WIDTH
    return int(columns) if columns.isdigit() and int(columns) > 0 else None
