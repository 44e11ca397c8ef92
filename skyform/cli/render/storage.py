"""`skyform storage ls`: a table, or JSON."""

from __future__ import annotations

from rich import box
from rich.markup import escape
from rich.table import Table

from skyform.cli.render.console import make_console
from skyform.cli.render.output import print_json
from skyform.ops.storage import BucketRow


def render_buckets(rows: list[BucketRow], *, as_json: bool) -> None:
    if as_json:
        print_json([r.to_json() for r in rows])
        return
    console = make_console()
    if not rows:
        console.print("No existing storage.")
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("NAME", "STORE", "REGION", "PERSISTENT", "USED BY", "SIZE"):
        table.add_column(column)
    for r in rows:
        size = "-" if r.size_gb is None else f"{r.size_gb:.3g} GB"
        table.add_row(
            escape(r.name),
            escape(r.store.upper()),
            escape(r.region or "-"),
            "yes" if r.persistent else "no (deleted at down)",
            escape(", ".join(r.used_by) or "-"),
            size,
        )
    console.print(table)
