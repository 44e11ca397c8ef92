"""`disk_tier` (low | medium | high | ultra | best) -> the boot disk each cloud provisions.

Same tiers as SkyPilot: no tier means `medium`, `best` means `ultra`.
- AWS: low = `standard` (magnetic), medium = gp3 at 3,500 IOPS, high = gp3 at 7,000 IOPS
  (throughput IOPS/16 MiB/s), ultra = io2 at 20,000 IOPS. IOPS are capped by what the volume
  size allows (gp3: 500 per GiB, never below its 3,000 baseline; io2: 500 per GiB).
- GCP: low = pd-standard, medium = pd-balanced, high = pd-ssd, ultra = pd-extreme (20,000
  provisioned IOPS), remapped per machine family because families support different types:
  pd-extreme only on n2 with 64+ vCPUs and the m-series (else pd-ssd; a3 uses
  hyperdisk-balanced); no pd-standard on a3, g2, c3, c3d, h3 (pd-balanced instead); the newest
  families take only Hyperdisk (hyperdisk-balanced for every tier).
"""

from __future__ import annotations

from skyform.errors import StackError

TIERS = ("low", "medium", "high", "ultra", "best")
DEFAULT_TIER = "medium"

AWS_TIERS: dict[str, tuple[str, int]] = {
    "low": ("standard", 0),
    "medium": ("gp3", 3500),
    "high": ("gp3", 7000),
    "ultra": ("io2", 20000),
}
GP3_BASELINE_IOPS = 3000
IOPS_PER_GIB = 500
GP3_MAX_THROUGHPUT = 1000  # MiB/s

GCP_TIERS = {"low": "pd-standard", "medium": "pd-balanced", "high": "pd-ssd", "ultra": "pd-extreme"}
PD_EXTREME_IOPS = 20000
GCP_HYPERDISK_ONLY = ("c4", "c4a", "c4d", "n4", "n4a", "n4d", "a4", "a4x", "g4", "x4", "h4d")
GCP_NO_PD_STANDARD = ("a3", "g2", "c3", "c3d", "h3")
GCP_PD_EXTREME_FAMILIES = ("m1", "m2", "m3")


def tier(disk_tier: str | None) -> str:
    value = (disk_tier or DEFAULT_TIER).lower()
    if value not in TIERS:
        raise StackError(
            f"disk_tier {disk_tier!r} is not one of {', '.join(TIERS)}",
            "Fix `resources.disk_tier` in the task file and plan again.",
        )
    return "ultra" if value == "best" else value


def aws_root_volume(size_gb: int, disk_tier: str | None) -> dict:
    """{size_gb, type, iops, throughput} for the instance's root EBS volume (None = default)."""
    volume_type, wanted_iops = AWS_TIERS[tier(disk_tier)]
    iops: int | None = None
    throughput: int | None = None
    if volume_type == "gp3":
        iops = max(GP3_BASELINE_IOPS, min(wanted_iops, size_gb * IOPS_PER_GIB))
        throughput = min(iops // 16, GP3_MAX_THROUGHPUT)
    elif volume_type == "io2":
        iops = max(100, min(wanted_iops, size_gb * IOPS_PER_GIB))
    return {"size_gb": size_gb, "type": volume_type, "iops": iops, "throughput": throughput}


def gcp_family(machine_type: str) -> str:
    return machine_type.split("-", 1)[0]


def gcp_disk_type(machine_type: str, vcpus: float | None, disk_tier: str | None) -> str:
    wanted = tier(disk_tier)
    family = gcp_family(machine_type)
    if family in GCP_HYPERDISK_ONLY or machine_type.startswith("a3-ultragpu"):
        return "hyperdisk-balanced"
    if wanted == "ultra":
        if family == "a3":
            return "hyperdisk-balanced"
        extreme_ok = family in GCP_PD_EXTREME_FAMILIES or (family == "n2" and (vcpus or 0) >= 64)
        return "pd-extreme" if extreme_ok else "pd-ssd"
    if wanted == "low" and family in GCP_NO_PD_STANDARD:
        return "pd-balanced"
    return GCP_TIERS[wanted]


def gcp_boot_disk(
    machine_type: str, vcpus: float | None, size_gb: int, disk_tier: str | None
) -> dict:
    """{size_gb, type, iops} for the instance's boot disk (iops only for pd-extreme)."""
    disk_type = gcp_disk_type(machine_type, vcpus, disk_tier)
    iops = PD_EXTREME_IOPS if disk_type == "pd-extreme" else None
    return {"size_gb": size_gb, "type": disk_type, "iops": iops}
