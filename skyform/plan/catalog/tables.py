"""Reading and validating the catalog CSVs (SkyPilot catalog schema v8 and our extras).

Columns are always looked up by name: the AWS and GCP files order them differently. Every row
is checked (column count, numbers, required values) so a malformed or truncated file is
rejected as a whole with the file, line and column at fault, never half-loaded.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import overload

from skyform.errors import CatalogError

# Parsed VM row, the same shape for AWS and GCP:
# (instance_type | None, accelerator | None, accelerator_count, vcpus | None, memory_gib | None,
#  gpu_memory_gib | None, price | None, spot_price | None, region, zone, arch)
VM_COLUMNS = (
    "InstanceType",
    "AcceleratorName",
    "AcceleratorCount",
    "vCPUs",
    "MemoryGiB",
    "GpuInfo",
    "Price",
    "SpotPrice",
    "Region",
    "AvailabilityZone",
)
_NUMERIC = ("AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "SpotPrice")
_GPU_MIB = re.compile(r"'SizeInMiB':\s*([0-9.]+)")
_QUOTED = re.compile(r"'([^']*)'")

HINT_REFRESHED = (
    "Run `skyform catalog refresh` again, or delete SKYFORM_HOME/catalog to fall back to the "
    "bundled catalog."
)


def read_text(path: Path) -> str:
    """A catalog file's text; `.gz` files (the bundled copies) are decompressed."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise CatalogError(f"{path}: corrupt gzip data: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{path}: not UTF-8 text: {exc}") from None


def _rows(text: str, where: str, required: tuple[str, ...]) -> tuple[dict[str, int], Iterator]:
    if not text.endswith("\n"):
        raise CatalogError(
            f"{where}: file does not end with a newline (truncated?)", HINT_REFRESHED
        )
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header:
        raise CatalogError(f"{where}: empty file, expected a CSV header", HINT_REFRESHED)
    index = {name.strip(): i for i, name in enumerate(header)}
    missing = [c for c in required if c not in index]
    if missing:
        raise CatalogError(
            f"{where}: header lacks column(s) {', '.join(missing)}",
            hint=f"Expected SkyPilot catalog v8 columns: {', '.join(required)}. " + HINT_REFRESHED,
        )
    width = len(header)

    def checked() -> Iterator[tuple[int, list[str]]]:
        for line_no, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != width:
                raise CatalogError(
                    f"{where}:{line_no}: {len(row)} columns, the header has {width}",
                    HINT_REFRESHED,
                )
            yield line_no, row

    return index, checked()


def _number(value: str, where: str, line_no: int, column: str) -> float | None:
    if value == "":
        return None
    try:
        number = float(value)
    except ValueError:
        raise CatalogError(
            f"{where}:{line_no}: column {column}: {value!r} is not a number", HINT_REFRESHED
        ) from None
    if not number >= 0.0 or number == float("inf"):  # rejects NaN, negatives, inf
        raise CatalogError(
            f"{where}:{line_no}: column {column}: {value!r} is not a price/size", HINT_REFRESHED
        )
    return number


def gpu_memory_gib(gpu_info: str) -> float | None:
    """Per-accelerator memory from a `GpuInfo` cell (`'SizeInMiB': 40960` -> 40.0)."""
    match = _GPU_MIB.search(gpu_info)
    return round(float(match.group(1)) / 1024.0, 3) if match else None


def parse_vms(text: str, where: str, cloud: str, *, strict: bool = False) -> list[tuple]:
    """Rows of an AWS or GCP `vms.csv` as VM row tuples (see module comment).

    `strict` also rejects negative, NaN and infinite numbers cell by cell (refresh validates
    downloads this way); loading trusts files whose sha256 was checked and only catches what
    would not parse at all, which keeps the load fast.
    """
    index, rows = _rows(text, where, VM_COLUMNS)
    c_type, c_acc, c_count, c_cpu, c_mem, c_info, c_price, c_spot, c_region, c_zone = (
        index[c] for c in VM_COLUMNS
    )
    c_arch = index.get("Arch")
    default_arch = "x86_64"
    out: list[tuple] = []
    append = out.append
    for line_no, row in rows:
        if strict:
            _check_numbers(row, index, where, line_no)
        itype, acc, region, zone = (
            row[c_type] or None,
            row[c_acc] or None,
            row[c_region],
            row[c_zone],
        )
        if not region or not zone or (itype is None and acc is None):
            _check_required(itype, acc, region, zone, where, line_no)
        count, cpus, mem = row[c_count], row[c_cpu], row[c_mem]
        price, spot, info = row[c_price], row[c_spot], row[c_info]
        arch = row[c_arch] if c_arch is not None else ""
        if not arch:
            arch = "arm64" if cloud == "gcp" and (itype or "").startswith("t2a-") else default_arch
        try:
            append(
                (
                    itype,
                    acc,
                    float(count) if count else (1.0 if acc else 0.0),
                    float(cpus) if cpus else None,
                    float(mem) if mem else None,
                    gpu_memory_gib(info) if acc and info else None,
                    float(price) if price else None,
                    float(spot) if spot else None,
                    region,
                    zone,
                    arch,
                )
            )
        except ValueError:
            _check_numbers(row, index, where, line_no)
            raise
    return out


def _check_numbers(row: list[str], index: dict[str, int], where: str, line_no: int) -> None:
    for name in _NUMERIC:
        _number(row[index[name]], where, line_no, name)


def _check_required(itype, acc, region, zone, where: str, line_no: int) -> None:
    if not region or not zone:
        raise CatalogError(
            f"{where}:{line_no}: Region and AvailabilityZone must be set", HINT_REFRESHED
        )
    raise CatalogError(
        f"{where}:{line_no}: neither InstanceType nor AcceleratorName is set", HINT_REFRESHED
    )


def parse_table(text: str, where: str, required: tuple[str, ...]) -> list[tuple[int, dict]]:
    """Small tables: (line number, {column: value}) for each row, all required columns present."""
    index, rows = _rows(text, where, required)
    return [(line_no, {name: row[i] for name, i in index.items()}) for line_no, row in rows]


@overload
def number(row: dict, column: str, where: str, line_no: int, *, default: float) -> float: ...
@overload
def number(
    row: dict, column: str, where: str, line_no: int, *, default: None = None
) -> float | None: ...
def number(
    row: dict, column: str, where: str, line_no: int, *, default: float | None = None
) -> float | None:
    value = _number(row.get(column, "").strip(), where, line_no, column)
    return default if value is None else value


def parse_clouds(cell: str) -> list[str]:
    """accelerators.csv `Clouds` cell (`"['AWS', 'GCP']"`) -> ['AWS', 'GCP']."""
    return _QUOTED.findall(cell)
