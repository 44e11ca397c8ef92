"""The `status` table: SkyPilot's columns, one row of plain cells per cluster. It is written
as plain lines when it fits and stdout is no terminal (no rich is imported then), and drawn
by rich otherwise; the text is the same either way (tests/cli/test_status_table.py).

Light at import (no rich, no models): `status` of plain rows (state/rows.py) prints from
here without loading either.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from skyform.cli.render import fmt
from skyform.cli.render.empty import NO_CLUSTERS
from skyform.cli.render.fasttable import print_table, status_table_lines
from skyform.cli.render.lines import plain_width
from skyform.cli.render.visible import visible

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from skyform.state.rows import ClusterRow

STATUS_COLUMNS = ("NAME", "INFRA", "RESOURCES", "STATUS", "AUTOSTOP", "LAUNCHED", "COST/hr")


class StatusOffer(fmt.OfferText, Protocol):
    """What the table reads of an offer (a PlacedOffer, or an OfferRow)."""

    @property
    def vcpus(self) -> float | None: ...
    @property
    def memory_gib(self) -> float | None: ...
    @property
    def infra(self) -> str: ...


def ago(ts: float | None, now: float | None = None) -> str:
    if ts is None:
        return "-"
    seconds = max(0, int((now or time.time()) - ts))
    for unit, size in (("day", 86400), ("hr", 3600), ("min", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n > 1 else ''} ago"
    return f"{seconds} sec{'s' if seconds != 1 else ''} ago" if seconds else "just now"


def resources(offer: StatusOffer, num_nodes: int) -> str:
    inside = [
        f"{fmt.number(offer.vcpus)} vCPU" if offer.vcpus else None,
        f"{fmt.number(offer.memory_gib)} GB" if offer.memory_gib else None,
        fmt.gpus(offer) if offer.accelerator else None,
    ]
    detail = ", ".join(p for p in inside if p)
    return f"{num_nodes}x {fmt.instance(offer)}" + (f" ({detail})" if detail else "")


def cells(
    name: str,
    offer: StatusOffer,
    num_nodes: int,
    *,
    state: str,
    autostop: str,
    launched_at: float | None,
    hourly_price: float,
) -> tuple[str, ...]:
    """One row of the table (`state`: the status, with what --refresh found lost); each cell
    one line, its control characters shown (the fast and the rich table draw the same)."""
    row = (
        name,
        offer.infra,
        resources(offer, num_nodes),
        state,
        autostop,
        ago(launched_at),
        fmt.usd(hourly_price * num_nodes, hourly=True),
    )
    return tuple(visible(cell, lines=False) for cell in row)


def status_table(rows: Sequence[Sequence[str]]) -> Table:
    """The status table as rich lays it out (RESOURCES wraps when the console is narrow)."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in STATUS_COLUMNS:
        table.add_column(col, no_wrap=col != "RESOURCES")
    for row in rows:
        table.add_row(*map(escape, row))
    return table


def print_status_table(console: Console, rows: Sequence[Sequence[str]]) -> None:
    if not print_table(console, STATUS_COLUMNS, rows):  # too wide: rich wraps RESOURCES
        console.print(status_table(rows))


def render_rows(clusters: list[ClusterRow]) -> None:
    """`status` of plain rows (no autostop to report, no --refresh health): what
    render_status prints for the same clusters."""
    rows = [
        cells(
            c.name,
            c.offer,
            c.num_nodes,
            state=c.status.value,
            autostop="-",
            launched_at=c.launched_at,
            hourly_price=c.hourly_price,
        )
        for c in clusters
    ]
    width = plain_width()
    if width is not None:  # a pipe, no colour: the lines rich would write, without rich
        if rows:
            found = status_table_lines(STATUS_COLUMNS, rows, width)
        else:
            found = [NO_CLUSTERS] if len(NO_CLUSTERS) <= width else None
        if found is not None:
            sys.stdout.write("\n".join(found) + "\n")
            return
    from skyform.cli.render.console import make_console

    console = make_console()
    if not rows:
        console.print(NO_CLUSTERS)
        return
    print_status_table(console, rows)
