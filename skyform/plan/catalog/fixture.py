"""The fictional `fixtures_tiny.csv` catalog (clouds `cloud-a`, `cloud-b`) for unit tests.

Its single file has a `Cloud` column and no GpuInfo/Arch; egress comes from
`fixtures_tiny_egress.csv`, whose rows have no tiers (one price from 0 GB, unbounded).
"""

from __future__ import annotations

from pathlib import Path

from skyform.plan.catalog import tables
from skyform.plan.catalog.accelerators import AcceleratorNames
from skyform.plan.catalog.catalog import Catalog, CatalogSource
from skyform.plan.catalog.egress import EgressTable
from skyform.plan.catalog.index_build import IndexContent, build_index, parse_egress, price_digest
from skyform.plan.catalog.onprem import onprem_digest

FIXTURE_COLUMNS = (
    "Cloud",
    "InstanceType",
    "AcceleratorName",
    "AcceleratorCount",
    "vCPUs",
    "MemoryGiB",
    "Price",
    "SpotPrice",
    "Region",
    "AvailabilityZone",
)


def load_fixture_catalog(csv_path: Path, egress_path: Path) -> Catalog:
    """The fixture as a catalog over an in-memory index (the same queries as the real one)."""
    where = str(csv_path)
    offers: list[tuple] = []
    text = tables.read_text(Path(csv_path))
    for line_no, row in tables.parse_table(text, where, FIXTURE_COLUMNS):
        num = {c: tables.number(row, c, where, line_no) for c in FIXTURE_COLUMNS[3:8]}
        acc = row["AcceleratorName"] or None
        count = num["AcceleratorCount"] or (1.0 if acc else 0.0)
        base = (row["Cloud"], row["Region"], row["AvailabilityZone"], row["InstanceType"])
        specs = (acc, count, num["vCPUs"], num["MemoryGiB"], "x86_64", None, None, None)
        if num["Price"] is not None:
            offers.append((*base, False, num["Price"], *specs))
        if num["SpotPrice"] is not None:
            offers.append((*base, True, num["SpotPrice"], *specs))
    egress_text = tables.read_text(Path(egress_path))
    egress = parse_egress(str(egress_path), egress_text)
    clouds = tuple(sorted({row[0] for row in offers}))
    names = {c: sorted({r[6] for r in offers if r[0] == c and r[6]}) for c in clouds}
    content = IndexContent(
        offers=offers,
        names=names,
        egress=egress,
        images=[],
        pricing=[],
        gpus=[],
        accelerator_clouds={},
        digest=price_digest({"fixture_vms": text, "egress": egress_text}),
    )
    return Catalog(
        build_index(content, None),
        [],
        names=AcceleratorNames({row[6] for row in offers if row[6]}),
        egress=EgressTable(egress),
        onprem_digest=onprem_digest(None, []),
        source=CatalogSource(kind="fixture", path=str(csv_path)),
        default_clouds=clouds,
    )
