"""Building the catalog index (index.py) from SkyPilot-format CSV tables.

`build_index(sources, target)` parses and validates every table (strictly: a malformed,
negative or NaN number anywhere rejects the whole build with file, line and column), turns VM
rows into offers (clouds.py), and writes the index — into a file atomically (a temporary
sibling, then a rename, so a reader sees the old index or the new one, never half of one), or
into an in-memory database for a CSV directory that has no index. Rows are inserted in a fixed
order and the file is VACUUMed, so the same sources give the same bytes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from skyform.errors import CatalogError
from skyform.paths import atomic_path, ensure_dir
from skyform.plan.catalog import tables
from skyform.plan.catalog.clouds import PRICED_ROWS, GcpHosts, offer_rows, vm_table
from skyform.plan.catalog.egress import EGRESS_COLUMNS, EgressRow
from skyform.plan.catalog.index import INDEX_FORMAT, SCHEMA, OfferIndex
from skyform.plan.catalog.kubernetes import PRICING_COLUMNS, GpuInfo, PricingRow
from skyform.plan.catalog.offer import Offer, needs_opt_in

# Tables whose content decides prices; the digest covers exactly these.
VM_TABLES = tuple(vm_table(r.name) for r in PRICED_ROWS)
DIGEST_TABLES = (*VM_TABLES, "gcp_hosts", "k8s_pricing", "egress")
IMAGE_COLUMNS = ("Tag", "Region", "OS", "OSVersion", "ImageId", "CreationDate")

Source = tuple[str, str]  # (where it came from, text)


@dataclass
class IndexContent:
    """Everything an index holds, parsed (offers as rows in `offer.FIELDS` order)."""

    offers: list[tuple]
    names: dict[str, list[str]]  # cloud -> accelerator names its tables mention
    egress: list[EgressRow]
    images: list[tuple]
    pricing: list[PricingRow]
    gpus: list[GpuInfo]
    accelerator_clouds: dict[str, list[str]]
    digest: str
    file_rows: dict[str, int] = field(default_factory=dict)
    sources: str = ""  # sha256 of the refreshed files it was built from ("" otherwise)


def parse_sources(
    sources: Mapping[str, Source],
    images: Mapping[str, Source],
    parsed: Mapping[str, tuple[str, list[tuple]]] | None = None,
) -> IndexContent:
    """Parse the logical tables (load.FILES keys) and per-cloud refreshed image tables.

    `parsed`: cloud -> (text, its strictly parsed VM rows), for VM tables already parsed
    (refresh validates each download that way): used when the text is the very same."""
    hosts = parse_hosts(*sources["gcp_hosts"])
    vms = {}
    for r in PRICED_ROWS:
        where, text = sources[vm_table(r.name)]
        known = (parsed or {}).get(r.name)
        if known is not None and known[0] == text:
            vms[r.name] = known[1]
        else:
            vms[r.name] = tables.parse_vms(text, where, r.name, strict=True)
    return IndexContent(
        offers=[o for r in PRICED_ROWS for o in offer_rows(r, vms[r.name], hosts)],
        names={cloud: _names(rows) for cloud, rows in vms.items()},
        egress=parse_egress(*sources["egress"]),
        images=parse_images(sources["images"], images),
        pricing=parse_k8s_pricing(*sources["k8s_pricing"]),
        gpus=list(parse_k8s_gpus(*sources["k8s_gpus"]).values()),
        accelerator_clouds=parse_accelerator_clouds(*sources["accelerators"]),
        digest=price_digest({t: sources[t][1] for t in DIGEST_TABLES}),
        file_rows={t: _data_rows(sources[t][1]) for t in VM_TABLES},
    )


def _names(vms: list[tuple]) -> list[str]:
    return sorted({row[1] for row in vms if row[1]})


def build_index(content: IndexContent, target: Path | None) -> OfferIndex:
    """Write `content` as an index at `target` (atomically), or in memory when None."""
    if target is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        _write(conn, content)
        return OfferIndex(conn, "(in-memory catalog index)")
    ensure_dir(target.parent)
    mode = 0o644 if target.parent.stat().st_mode & 0o044 else 0o600
    with atomic_path(target, mode) as tmp:
        conn = sqlite3.connect(tmp)
        try:
            conn.execute("PRAGMA journal_mode = OFF")
            conn.execute("PRAGMA page_size = 4096")
            _write(conn, content)
            conn.execute("VACUUM")
        finally:
            conn.close()
    return OfferIndex.open(target)


def _write(conn: sqlite3.Connection, content: IndexContent) -> None:
    # the tables first, their secondary indexes once the rows are in: building an index over
    # sorted rows at the end is ~20% cheaper than keeping it up to date row by row
    tables_sql, _, indexes_sql = SCHEMA.partition("CREATE INDEX")
    conn.executescript(tables_sql)
    counts: dict[str, int] = {}
    rows = []
    for row in sorted(content.offers, key=_insert_order):
        offer = Offer(*row)
        counts[offer.cloud] = counts.get(offer.cloud, 0) + 1
        rows.append(_index_row(offer))
    try:
        conn.executemany(f"INSERT INTO offers VALUES ({', '.join('?' * 13)})", rows)
    except sqlite3.IntegrityError:
        raise CatalogError(
            "the catalog lists the same offer twice (cloud, region, zone, instance type, "
            "accelerator, spot)",
            tables.HINT_REFRESHED,
        ) from None
    places = sorted({(r[0], r[1], r[2], r[7], r[4], r[5]) for r in rows})  # index.KEY[:6]
    conn.executemany("INSERT INTO places VALUES (?, ?, ?, ?, ?, ?)", places)
    names = sorted((c, n) for c, ns in content.names.items() for n in set(ns))
    conn.executemany("INSERT INTO vm_accelerators VALUES (?, ?)", names)
    _insert(conn, "egress", content.egress)
    _insert(conn, "images", content.images)
    _insert(conn, "k8s_pricing", content.pricing)
    _insert(conn, "k8s_gpus", content.gpus)
    clouds = [(n, json.dumps(c)) for n, c in sorted(content.accelerator_clouds.items())]
    conn.executemany("INSERT INTO accelerator_clouds VALUES (?, ?)", clouds)
    meta = {
        "format": INDEX_FORMAT,
        "digest": content.digest,
        "file_rows": json.dumps(content.file_rows, sort_keys=True),
        "offer_counts": json.dumps(dict(sorted(counts.items()))),
        "sources": content.sources,
    }
    conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
    if indexes_sql:
        conn.executescript("CREATE INDEX" + indexes_sql)
    conn.commit()
    conn.execute("ANALYZE")  # statistics, so an instance-type lookup uses its index
    conn.commit()


def _index_row(offer: Offer) -> tuple:
    """An offer as a row of the `offers` table (index.SCHEMA column order)."""
    return (
        offer.cloud,
        offer.accelerator or "",
        offer.accelerator_count,
        offer.hourly_price,
        offer.region,
        offer.zone or "",
        offer.instance_type,
        int(offer.spot),
        offer.vcpus,
        offer.memory_gib,
        offer.arch,
        offer.gpu_memory_gib,
        int(needs_opt_in(offer)),
    )


def _insert_order(row: tuple) -> tuple:
    """The primary key's order (index.KEY), from an offer row."""
    return (row[0], row[6] or "", row[7], row[4], row[1], row[2] or "", row[5], row[3])


def _insert(conn: sqlite3.Connection, table: str, rows: Iterable[tuple]) -> None:
    rows = [tuple(r) for r in rows]
    if rows:
        marks = ", ".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)


# --- the small tables ----------------------------------------------------------------------


def _data_rows(text: str) -> int:
    """Rows below the header, without parsing (blank lines do not count)."""
    return sum(1 for line in text.splitlines()[1:] if line.strip())


def price_digest(texts: dict[str, str]) -> str:
    """sha256 over the price tables' text, by table name, in a fixed order."""
    import hashlib

    sha = hashlib.sha256()
    for name in sorted(texts):
        body = texts[name].replace("\r\n", "\n").encode()
        sha.update(f"{name} {len(body)}\n".encode())
        sha.update(body)
    return sha.hexdigest()


def parse_hosts(where: str, text: str) -> GcpHosts:
    hosts = GcpHosts()
    columns = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Kind")
    for line_no, row in tables.parse_table(text, where, columns):
        kind, acc = row["Kind"], row["AcceleratorName"]
        try:
            counts = tuple(float(c) for c in row["AcceleratorCount"].split("|"))
        except ValueError:
            raise CatalogError(f"{where}:{line_no}: bad AcceleratorCount") from None
        if kind == "fixed":
            hosts.fixed[row["InstanceType"]] = (acc, counts[0])
        elif kind == "attachable":
            hosts.attachable[acc] = counts
        else:
            raise CatalogError(f"{where}:{line_no}: Kind must be fixed or attachable")
    return hosts


def parse_k8s_pricing(where: str, text: str) -> list[PricingRow]:
    rows = []
    for line_no, row in tables.parse_table(text, where, PRICING_COLUMNS):
        rows.append(
            PricingRow(
                region=row["Region"],
                zone=row["Zone"],
                per_vcpu=tables.number(row, "PricePerVCPU", where, line_no, default=0.0),
                per_memory_gib=tables.number(row, "PricePerMemoryGB", where, line_no, default=0.0),
                accelerator=row["AcceleratorName"],
                per_accelerator=tables.number(
                    row, "PricePerAccelerator", where, line_no, default=0.0
                ),
            )
        )
    return rows


def parse_egress(where: str, text: str) -> list[EgressRow]:
    rows = []
    for line_no, row in tables.parse_table(text, where, EGRESS_COLUMNS):
        rows.append(
            EgressRow(
                cloud=row["Cloud"],
                source_region=row["SourceRegion"],
                destination=row["Destination"],
                tier_start_gb=tables.number(row, "TierStartGB", where, line_no, default=0.0),
                tier_end_gb=tables.number(row, "TierEndGB", where, line_no),
                price_per_gb=tables.number(row, "PricePerGB", where, line_no, default=0.0),
            )
        )
    return rows


def parse_k8s_gpus(where: str, text: str) -> dict[str, GpuInfo]:
    columns = ("AcceleratorName", "GpuMemoryMiB_AWS", "GpuMemoryMiB_GCP")
    gpus = {}
    for line_no, row in tables.parse_table(text, where, columns):
        mib = tables.number(row, "GpuMemoryMiB_GCP", where, line_no) or tables.number(
            row, "GpuMemoryMiB_AWS", where, line_no
        )
        name = row["AcceleratorName"]
        gpus[name] = GpuInfo(
            name=name,
            memory_gib=round(mib / 1024.0, 3) if mib else None,
            gke_label=row.get("GkeAcceleratorLabel", ""),
            product_label=row.get("NvidiaGpuProductExample", ""),
        )
    return gpus


def parse_accelerator_clouds(where: str, text: str) -> dict[str, list[str]]:
    rows = tables.parse_table(text, where, ("AcceleratorName", "Clouds"))
    return {row["AcceleratorName"]: tables.parse_clouds(row["Clouds"]) for _, row in rows}


def parse_images(bundled: Source, refreshed: Mapping[str, Source]) -> list[tuple]:
    """Image rows (catalog.Image order); a refreshed cloud's table replaces the bundle's."""
    found: list[tuple] = []
    for cloud, (where, text) in sorted(refreshed.items()):
        for _, row in tables.parse_table(text, where, IMAGE_COLUMNS):
            found.append(_image(cloud, row))
    for _, row in tables.parse_table(bundled[1], bundled[0], ("Cloud", *IMAGE_COLUMNS)):
        if row["Cloud"] not in refreshed:
            found.append(_image(row["Cloud"], row))
    return found


def _image(cloud: str, row: dict) -> tuple:
    fields = ("Tag", "Region", "ImageId", "OS", "OSVersion", "CreationDate")
    return (cloud, *(row[f] for f in fields))
