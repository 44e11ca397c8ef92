#!/usr/bin/env python3
"""Write a synthetic SkyPilot v8 catalog ~10× the bundled one, for the speed benchmarks.

    .venv/bin/python bench/synth_catalog.py OUT [--regions 30] [--seed 17]
    skyform catalog refresh --url file://$PWD/OUT      # index it into SKYFORM_HOME

OUT gets SkyPilot's layout (`aws/vms.csv`, `gcp/vms.csv`, `common/accelerators.csv`), grown
from the bundled tables the way real catalogs are bigger than the bundle:
- more regions: each cloud gets `--regions` regions (real region names; the bundle has 6), each
  a copy of a bundled region's rows — every instance type, GPU and TPU row, zones renamed — with
  that region's price level (AWS/GCP charge ~0.95–1.55× us-east by region) and spot prices
  drawn per zone around the source's spot/on-demand ratio;
- more instance types: AWS CPU families get compute-, memory- and storage-optimized siblings
  (`m7a` -> `c7a` at 2 GiB/vCPU, `r7a` and `i7a` at 8 GiB/vCPU, at AWS's relative prices) and
  GPU types a
  network-optimized sibling (`g5.xlarge` -> `g5n.xlarge`, same GPUs, +8–15%); GCP's CPU-only
  families get a sibling generation (`n2-` -> `n2s-`, ±15%). GCP GPU machine types are not
  multiplied (the bundle's accelerator-host table pairs them by name).
Deterministic for a given seed. Prints the row counts and the ratio to the bundle.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import random
import sys
from pathlib import Path

BUNDLE = Path(__file__).resolve().parents[1] / "skyform" / "plan" / "data"

# (region, AZ-ID prefix, template region, price level vs the template)
AWS_REGIONS = [
    ("us-east-1", "use1", "us-east-1", 1.0),
    ("us-east-2", "use2", "us-east-2", 1.0),
    ("us-west-2", "usw2", "us-west-2", 1.0),
    ("eu-west-1", "euw1", "eu-west-1", 1.0),
    ("eu-central-1", "euc1", "eu-central-1", 1.0),
    ("ap-northeast-1", "apne1", "ap-northeast-1", 1.0),
    ("us-west-1", "usw1", "us-west-2", 1.12),
    ("ca-central-1", "cac1", "us-east-1", 1.08),
    ("sa-east-1", "sae1", "us-east-1", 1.55),
    ("eu-west-2", "euw2", "eu-west-1", 1.04),
    ("eu-west-3", "euw3", "eu-west-1", 1.06),
    ("eu-north-1", "eun1", "eu-central-1", 0.95),
    ("eu-south-1", "eus1", "eu-central-1", 1.05),
    ("eu-central-2", "euc2", "eu-central-1", 1.12),
    ("ap-south-1", "aps1", "ap-northeast-1", 0.82),
    ("ap-southeast-1", "apse1", "ap-northeast-1", 0.96),
    ("ap-southeast-2", "apse2", "ap-northeast-1", 1.0),
    ("ap-northeast-2", "apne2", "ap-northeast-1", 0.95),
    ("ap-northeast-3", "apne3", "ap-northeast-1", 1.02),
    ("ap-east-1", "ape1", "ap-northeast-1", 1.1),
    ("me-south-1", "mes1", "eu-central-1", 1.1),
    ("me-central-1", "mec1", "eu-central-1", 1.08),
    ("af-south-1", "afs1", "eu-west-1", 1.18),
    ("il-central-1", "ilc1", "eu-central-1", 1.1),
    ("ap-southeast-3", "apse3", "ap-northeast-1", 1.0),
    ("ap-south-2", "aps2", "ap-northeast-1", 0.84),
    ("ca-west-1", "caw1", "us-east-2", 1.08),
    ("mx-central-1", "mxc1", "us-east-2", 1.1),
    ("ap-southeast-4", "apse4", "ap-northeast-1", 1.04),
    ("eu-south-2", "eus2", "eu-west-1", 1.02),
    ("us-gov-west-1", "usgw1", "us-west-2", 1.25),
    ("us-gov-east-1", "usge1", "us-east-2", 1.25),
]
GCP_REGIONS = [
    ("us-central1", "us-central1", 1.0),
    ("us-east1", "us-east1", 1.0),
    ("us-west1", "us-west1", 1.0),
    ("europe-west4", "europe-west4", 1.0),
    ("asia-east1", "asia-east1", 1.0),
    ("asia-northeast1", "asia-northeast1", 1.0),
    ("us-east4", "us-east1", 1.13),
    ("us-east5", "us-east1", 1.0),
    ("us-south1", "us-central1", 1.18),
    ("us-west2", "us-west1", 1.2),
    ("us-west3", "us-west1", 1.2),
    ("us-west4", "us-west1", 1.13),
    ("northamerica-northeast1", "us-east1", 1.1),
    ("northamerica-northeast2", "us-east1", 1.1),
    ("southamerica-east1", "us-east1", 1.59),
    ("southamerica-west1", "us-east1", 1.43),
    ("europe-west1", "europe-west4", 1.0),
    ("europe-west2", "europe-west4", 1.17),
    ("europe-west3", "europe-west4", 1.17),
    ("europe-west6", "europe-west4", 1.27),
    ("europe-west8", "europe-west4", 1.1),
    ("europe-west9", "europe-west4", 1.1),
    ("europe-north1", "europe-west4", 1.0),
    ("europe-central2", "europe-west4", 1.2),
    ("europe-southwest1", "europe-west4", 1.12),
    ("asia-south1", "asia-east1", 1.08),
    ("asia-southeast1", "asia-east1", 1.08),
    ("asia-southeast2", "asia-east1", 1.18),
    ("asia-northeast2", "asia-northeast1", 1.0),
    ("asia-northeast3", "asia-northeast1", 1.0),
    ("australia-southeast1", "asia-northeast1", 1.1),
    ("me-west1", "europe-west4", 1.1),
]
AWS_CPU_SIBLINGS = {"m": (("c", 2.0, 0.88), ("r", 8.0, 1.31), ("i", 8.0, 1.52))}  # GiB/vCPU, ×
GCP_GPU_FAMILIES = ("a2-", "a3-", "a4-", "a4x-", "g2-", "g4-", "n1-")


def bundled_rows(name: str) -> tuple[list[str], list[list[str]]]:
    text = gzip.decompress((BUNDLE / f"{name}.gz").read_bytes()).decode()
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], [r for r in rows[1:] if r]


def money(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".") if value else "0.0"


def spot_price(rng: random.Random, spot: str, scale: float, on_demand: float | None) -> str:
    """The source's spot price at this region's level, drawn per zone (±25%), never above
    on-demand by more than the source's own rounding slack."""
    if not spot:
        return ""
    value = float(spot) * scale * rng.uniform(0.75, 1.25)
    if on_demand is not None:
        value = min(value, on_demand * 1.001)
    return money(value)


def aws_types(header: list[str], rows: list[list[str]], rng: random.Random) -> list[list[str]]:
    """The bundled AWS rows plus sibling instance types (see the module docstring)."""
    c = {name: i for i, name in enumerate(header)}
    out = list(rows)
    factors: dict[str, float] = {}
    known = {row[c["InstanceType"]].partition(".")[0] for row in rows}
    for row in rows:
        itype = row[c["InstanceType"]]
        family, _, size = itype.partition(".")
        siblings = []
        if row[c["AcceleratorName"]]:
            if not family.endswith("n") and f"{family}n" not in known:
                factor = factors.setdefault(family, rng.uniform(1.08, 1.15))
                siblings.append((f"{family}n.{size}", None, factor))
        elif family[0] in AWS_CPU_SIBLINGS:
            cpus = float(row[c["vCPUs"]])
            for letter, per_cpu, price in AWS_CPU_SIBLINGS[family[0]]:
                siblings.append((f"{letter}{family[1:]}.{size}", cpus * per_cpu, price))
        for name, memory, factor in siblings:
            new = list(row)
            new[c["InstanceType"]] = name
            if memory is not None:
                new[c["MemoryGiB"]] = money(memory)
            price = float(row[c["Price"]]) * factor if row[c["Price"]] else None
            new[c["Price"]] = money(price) if price is not None else ""
            new[c["SpotPrice"]] = spot_price(rng, row[c["SpotPrice"]], factor, price)
            out.append(new)
    return out


def aws_regions(header, rows, count: int, rng: random.Random) -> list[list[str]]:
    c = {name: i for i, name in enumerate(header)}
    by_region: dict[str, list[list[str]]] = {}
    for row in rows:
        by_region.setdefault(row[c["Region"]], []).append(row)
    out = []
    for region, prefix, template, level in AWS_REGIONS[:count]:
        for row in by_region.get(template, []):
            az = row[c["AvailabilityZone"]]
            if region != template and az.count("-") >= 2:
                continue  # Local Zones belong to their own region only
            new = list(row)
            new[c["Region"]] = region
            new[c["AvailabilityZone"]] = prefix + az[az.index("-") :]
            price = float(row[c["Price"]]) * level if row[c["Price"]] else None
            new[c["Price"]] = money(price) if price is not None else ""
            new[c["SpotPrice"]] = spot_price(rng, row[c["SpotPrice"]], level, price)
            out.append(row if region == template else new)
    return out


def gcp_rows(header, rows, count: int, rng: random.Random) -> list[list[str]]:
    c = {name: i for i, name in enumerate(header)}
    grown = list(rows)
    factors: dict[str, float] = {}
    for row in rows:
        itype = row[c["InstanceType"]]
        if not itype or itype.startswith(GCP_GPU_FAMILIES):
            continue
        family, _, rest = itype.partition("-")
        factor = factors.setdefault(family, rng.uniform(0.85, 1.15))
        new = list(row)
        new[c["InstanceType"]] = f"{family}s-{rest}"
        price = float(row[c["Price"]]) * factor
        new[c["Price"]] = money(price)
        new[c["SpotPrice"]] = spot_price(rng, row[c["SpotPrice"]], factor, price)
        grown.append(new)
    by_region: dict[str, list[list[str]]] = {}
    for row in grown:
        by_region.setdefault(row[c["Region"]], []).append(row)
    out = []
    for region, template, level in GCP_REGIONS[:count]:
        for row in by_region.get(template, []):
            if region == template:
                out.append(row)
                continue
            new = list(row)
            new[c["Region"]] = region
            new[c["AvailabilityZone"]] = region + row[c["AvailabilityZone"]][len(template) :]
            price = float(row[c["Price"]]) * level if row[c["Price"]] else None
            new[c["Price"]] = money(price) if price is not None else ""
            new[c["SpotPrice"]] = spot_price(rng, row[c["SpotPrice"]], level, price)
            out.append(new)
    return out


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def generate(out: Path, regions: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    aws_header, aws = bundled_rows("aws_vms.csv")
    gcp_header, gcp = bundled_rows("gcp_vms.csv")
    aws_out = aws_regions(aws_header, aws_types(aws_header, aws, rng), regions, rng)
    gcp_out = gcp_rows(gcp_header, gcp, regions, rng)
    write_csv(out / "aws" / "vms.csv", aws_header, aws_out)
    write_csv(out / "gcp" / "vms.csv", gcp_header, gcp_out)
    accelerators = gzip.decompress((BUNDLE / "accelerators.csv.gz").read_bytes())
    (out / "common").mkdir(parents=True, exist_ok=True)
    (out / "common" / "accelerators.csv").write_bytes(accelerators)
    return {"aws": len(aws_out), "gcp": len(gcp_out), "bundled": len(aws) + len(gcp)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--regions", type=int, default=32, help="regions per cloud (max 32)")
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    rows = generate(args.out, min(args.regions, len(AWS_REGIONS), len(GCP_REGIONS)), args.seed)
    total = rows["aws"] + rows["gcp"]
    print(
        f"wrote {args.out}: aws/vms.csv {rows['aws']} rows, gcp/vms.csv {rows['gcp']} rows — "
        f"{total / rows['bundled']:.1f}× the bundled {rows['bundled']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
