"""`skyform gpus` tables (summary, and per-accelerator instance types with prices)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from skyform.cli.render.console import make_console
from skyform.cli.render.output import print_json
from skyform.plan.catalog.listing import GpuRow, GpuSummary

ATTACHABLE_NOTE = (
    "* GCP attaches this GPU to N1 machines: shown on the cheapest N1 host of SkyPilot's default "
    "size; any N1 host within GCP's vCPU/memory caps works (set cpus/memory in the task)."
)
MAX_COUNTS = 12


def price(value: float | None) -> str:
    """Full source precision, no float noise: 21.957642 -> "$ 21.957642"."""
    if value is None:
        return "-"
    return "$ " + (f"{value:.6f}".rstrip("0").rstrip("."))


def quantity(value: float | None) -> str:
    if value is None:
        return "-"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def gib(value: float | None) -> str:
    return "-" if value is None else f"{quantity(round(value, 1))}GB"


def render_gpu_summary(rows: list[GpuSummary], *, as_json: bool, console=None) -> None:
    if as_json:
        print_json([r.to_dict() for r in rows])
        return
    console = console or make_console()
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("GPU", "CLOUD", "AVAILABLE_QUANTITIES"):
        table.add_column(column)
    for row in rows:
        counts = [quantity(c) for c in row.counts]
        if len(counts) > MAX_COUNTS:
            counts = [*counts[: MAX_COUNTS - 2], "…", counts[-1], f"({len(row.counts)} sizes)"]
        table.add_row(escape(row.accelerator), escape(row.cloud), escape(", ".join(counts)))
    console.print(table)
    console.print("\nDetails and prices: `skyform gpus NAME` (e.g. `skyform gpus A100:8`).")


def render_gpu_rows(rows: list[GpuRow], *, as_json: bool, console=None) -> None:
    if as_json:
        print_json([r.to_dict() for r in rows])
        return
    console = console or make_console()
    table = Table(box=None, header_style="bold", pad_edge=False)
    columns = ("GPU", "QTY", "CLOUD", "INSTANCE_TYPE", "DEVICE_MEM", "vCPUs", "HOST_MEM")
    for column in columns:
        table.add_column(column)
    for column in ("HOURLY_PRICE", "HOURLY_SPOT_PRICE"):
        table.add_column(column, justify="right")
    table.add_column("REGION")
    for row in rows:
        table.add_row(
            escape(row.accelerator),
            quantity(row.count),
            escape(row.cloud),
            escape(row.instance_type) + (" *" if row.attachable else ""),
            gib(row.device_memory_gib),
            quantity(row.vcpus),
            gib(row.host_memory_gib),
            price(row.hourly_price),
            price(row.hourly_spot_price),
            escape(row.region),
        )
    console.print(table)
    if any(r.attachable for r in rows):
        console.print(f"\n{ATTACHABLE_NOTE}")
