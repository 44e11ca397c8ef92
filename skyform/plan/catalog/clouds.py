"""Turn parsed VM rows of the priced clouds into offer rows (tuples in `offer.FIELDS` order).

Which clouds are priced, where their VM table is and how it reads is their row of the infra
table (skyform/infra.py: `vm_catalog`, `catalog_layout`).

"plain" layout (AWS; SkyPilot's usual vms.csv): each row is one instance type in one AZ; it
yields an on-demand offer when `Price` is set (the region's price, repeated per AZ) and a spot
offer when `SpotPrice` is set.

"gcp" layout: a GPU offer is a machine row plus a GPU row of the same zone, summed (on-demand
and spot separately; both parts must have a price):
- accelerator-optimized machine types (a2, a3, a4, g2) carry a fixed GPU given by
  `gcp_accelerator_hosts.csv`; their VM rows alone are not offers (they exclude the GPU; a4's are
  even priced 0), and a machine row with no GPU row in its zone yields nothing;
- N1-attachable GPUs (T4, V100, P100, P4) combine with every n1-standard/highmem/highcpu row of
  the zone whose vCPUs and memory are within GCP's cap for that GPU count;
- TPU rows are whole-price offers with instance type = the TPU name and unknown vCPUs/memory;
- any other VM row is a CPU-only offer; GPU rows of unknown pairing are skipped, and so are
  machine types of accelerator-optimized families missing from the hosts table (a refreshed
  catalog may list new ones): their VM price excludes a GPU we cannot price.

Duplicate rows for the same (type, zone) — the GCP source repeats 94 TPU rows in europe-west4-b —
are collapsed, keeping the cheaper on-demand price if they ever disagree, so offer ids are unique.
"""

from __future__ import annotations

from skyform.infra import TABLE, InfraKind
from skyform.plan.catalog.accelerators import N1_HOST_FAMILIES, n1_caps

# The clouds with a VM price table, in the infra table's order.
PRICED_ROWS: tuple[InfraKind, ...] = tuple(r for r in TABLE if r.priced and r.vm_catalog)


def vm_table(cloud: str) -> str:
    """The logical name of a priced cloud's VM table (`aws_vms`): the price digest tags its
    text with it, so it must not change."""
    return f"{cloud}_vms"


def vm_files(row: InfraKind) -> tuple[str, str]:
    """(its file in SkyPilot's layout, its file in the bundle): `aws/vms.csv`, `aws_vms.csv`."""
    refreshed = row.vm_catalog or f"{row.name}/vms.csv"
    return refreshed, refreshed.replace("/", "_")


# GCP families whose machine types always carry GPUs (priced separately in GPU rows).
ACCELERATOR_FAMILIES = ("a2-", "a3-", "a4-", "a4x-", "g2-", "g4-")


class GcpHosts:
    """gcp_accelerator_hosts.csv: fixed machine type -> GPU, and attachable GPU -> counts."""

    def __init__(self) -> None:
        self.fixed: dict[str, tuple[str, float]] = {}
        self.attachable: dict[str, tuple[float, ...]] = {}


def _round(price: float) -> float:
    # Sums of two 5-decimal prices pick up float noise (5.91582 + 23.47126); 8 places keep every
    # source digit and make the sum print and hash the same everywhere.
    return round(price, 8)


def unique_rows(vms: list[tuple]) -> list[tuple]:
    """VM rows with one row per (instance type, accelerator, count, zone)."""
    seen: dict[tuple, int] = {}
    out: list[tuple] = []
    for row in vms:
        key = (row[0], row[1], row[2], row[9])
        at = seen.get(key)
        if at is None:
            seen[key] = len(out)
            out.append(row)
        elif _cheaper(row, out[at]):
            out[at] = row
    return out


def _cheaper(row: tuple, other: tuple) -> bool:
    inf = float("inf")
    mine = (inf if row[6] is None else row[6], inf if row[7] is None else row[7])
    theirs = (inf if other[6] is None else other[6], inf if other[7] is None else other[7])
    return mine < theirs


def offer_rows(row: InfraKind, vms: list[tuple], hosts: GcpHosts) -> list[tuple]:
    """The offers of one priced cloud's parsed VM table, read as its row's layout says."""
    if row.catalog_layout == "gcp":
        return gcp_offer_rows(vms, hosts)[0]
    return plain_offer_rows(vms, row.name)


def plain_offer_rows(vms: list[tuple], cloud: str) -> list[tuple]:
    out = []
    for itype, acc, count, cpus, mem, gpu_mem, price, spot, region, zone, arch in unique_rows(vms):
        if itype is None:
            continue
        specs = (acc, count, cpus, mem, arch, gpu_mem, None, None)
        if price is not None:
            out.append((cloud, region, zone, itype, False, price, *specs))
        if spot is not None:
            out.append((cloud, region, zone, itype, True, spot, *specs))
    return out


def gcp_offer_rows(vms: list[tuple], hosts: GcpHosts) -> tuple[list[tuple], int]:
    """(offer rows, number of GPU/VM rows that could not be paired and were skipped)."""
    gpus: dict[tuple[str, str, float], tuple] = {}
    n1_by_zone: dict[str, list[tuple]] = {}
    machines: list[tuple] = []
    out: list[tuple] = []
    for row in unique_rows(vms):
        itype, acc = row[0], row[1]
        if itype is None and acc is not None and acc.startswith("tpu-"):
            out.extend(_tpu_offers(row))
        elif itype is None:
            gpus[(row[9], acc, row[2])] = row
        else:
            machines.append(row)
            if itype.startswith(N1_HOST_FAMILIES):
                n1_by_zone.setdefault(row[9], []).append(row)
    used: set[tuple[str, str, float]] = set()
    skipped = 0
    for vm in machines:
        itype, zone = vm[0], vm[9]
        fixed = hosts.fixed.get(itype)
        if fixed is None:
            if itype.startswith(ACCELERATOR_FAMILIES):
                skipped += 1
            else:
                out.extend(_priced("gcp", vm, None, None, 0.0, None))
            continue
        key = (zone, fixed[0], fixed[1])
        gpu = gpus.get(key)
        if gpu is None:
            skipped += 1
            continue
        used.add(key)
        out.extend(_priced("gcp", vm, gpu, fixed[0], fixed[1], gpu[5]))
    for key, gpu in gpus.items():
        zone, acc, count = key
        if count not in hosts.attachable.get(acc, ()):
            skipped += key not in used
            continue
        caps = n1_caps(acc, count, zone)
        if caps is None:
            skipped += 1
            continue
        max_cpus, max_mem = caps
        for vm in n1_by_zone.get(zone, ()):
            if vm[3] is not None and vm[4] is not None and vm[3] <= max_cpus and vm[4] <= max_mem:
                out.extend(_priced("gcp", vm, gpu, acc, count, gpu[5]))
    return out, skipped


def _priced(cloud, vm, gpu, acc, count, gpu_mem) -> list[tuple]:
    itype, _, _, cpus, mem, _, price, spot, region, zone, arch = vm
    if gpu is not None:
        price = None if price is None or gpu[6] is None else _round(price + gpu[6])
        spot = None if spot is None or gpu[7] is None else _round(spot + gpu[7])
    specs = (acc, count, cpus, mem, arch, gpu_mem, None, None)
    rows = []
    if price is not None:
        rows.append((cloud, region, zone, itype, False, price, *specs))
    if spot is not None:
        rows.append((cloud, region, zone, itype, True, spot, *specs))
    return rows


def _tpu_offers(row: tuple) -> list[tuple]:
    _, acc, count, cpus, mem, _gpu_mem, price, spot, region, zone, arch = row
    specs = (acc, count, cpus, mem, arch, None, None, None)
    rows = []
    if price is not None:
        rows.append(("gcp", region, zone, acc, False, price, *specs))
    if spot is not None:
        rows.append(("gcp", region, zone, acc, True, spot, *specs))
    return rows
