"""Loading the catalog: bundled data, a refreshed copy under SKYFORM_HOME, or the test fixture.

Bundled files live in `skyform/plan/data/` (gzip-compressed copies of ../shared/catalog, built by
scripts/build_catalog.py). `skyform catalog refresh` writes SkyPilot's own layout
(`aws/vms.csv`, `gcp/vms.csv`, optional `aws/images.csv`, `gcp/images.csv`,
`common/accelerators.csv`) plus `manifest.json` to SKYFORM_HOME/catalog; whatever a refreshed
copy lacks (GCP accelerator hosts, Kubernetes tables, egress) still comes from the bundle.

`digest` is a sha256 over the cloud price data as loaded: the decompressed text of the AWS and
GCP VM tables, GCP accelerator hosts, Kubernetes pricing and egress, each tagged with its table
name and hashed in a fixed order. It does not depend on file paths, compression or the order in
which files are read; a file whose rows are merely reordered counts as different (a plan is then
reported stale, never wrongly fresh). Local/ssh offers get `onprem_digest` instead.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from skyform.errors import CatalogError
from skyform.plan.catalog import tables
from skyform.plan.catalog.accelerators import AcceleratorNames
from skyform.plan.catalog.catalog import Catalog, CatalogSource, Image
from skyform.plan.catalog.clouds import GcpHosts, aws_offer_rows, gcp_offer_rows
from skyform.plan.catalog.egress import EGRESS_COLUMNS, EgressRow, EgressTable
from skyform.plan.catalog.hostfacts import read_facts
from skyform.plan.catalog.k8s_capacity import CACHE_FILE, KubernetesCapacity
from skyform.plan.catalog.kubernetes import PRICING_COLUMNS, GpuInfo, KubernetesPricing, PricingRow
from skyform.plan.catalog.onprem import (
    local_offer_row,
    onprem_digest,
    onprem_parts,
    ssh_offer_rows,
)

if TYPE_CHECKING:
    from skyform.config import Config

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "data"
MANIFEST = "manifest.json"
DEFAULT_CAPACITY_TTL = 300.0  # keep in step with skyform.config.KubernetesSettings
DEFAULT_API_TIMEOUT = 5.0

# logical table -> (file in SkyPilot's layout (refreshed copies), file in the bundle)
FILES: dict[str, tuple[str | None, str]] = {
    "aws_vms": ("aws/vms.csv", "aws_vms.csv"),
    "gcp_vms": ("gcp/vms.csv", "gcp_vms.csv"),
    "gcp_hosts": (None, "gcp_accelerator_hosts.csv"),
    "accelerators": ("common/accelerators.csv", "accelerators.csv"),
    "images": (None, "images.csv"),
    "k8s_pricing": ("kubernetes/pricing.csv", "k8s_pricing_default.csv"),
    "k8s_gpus": (None, "k8s_gpu_labels.csv"),
    "egress": (None, "egress.csv"),
}
# Tables whose content decides prices; `digest` covers exactly these.
DIGEST_TABLES = ("aws_vms", "gcp_vms", "gcp_hosts", "k8s_pricing", "egress")
IMAGE_FILES = {"aws": "aws/images.csv", "gcp": "gcp/images.csv"}  # refreshed layout, no Cloud col


def catalog_home() -> Path:
    """SKYFORM_HOME/catalog. (Not via skyform.config: that module imports pydantic, and the
    catalog must load fast; keep the default in step with skyform.config.DEFAULT_HOME.)"""
    root = Path(os.environ.get("SKYFORM_HOME") or "~/.skyform").expanduser().resolve()
    return root / "catalog"


def _find(directory: Path, table: str) -> Path | None:
    refreshed, bundled = FILES[table]
    for name in (refreshed, bundled, f"{bundled}.gz"):
        if name and (directory / name).is_file():
            return directory / name
    return None


def load_catalog(config: Config | None = None, *, source: Path | None = None) -> Catalog:
    """The catalog in use: `source` if given (a directory in either layout), else the refreshed
    copy in SKYFORM_HOME/catalog when present and valid, else the bundled data.

    `config` supplies the local node and ssh pools; None reads SKYFORM_HOME/config.yaml if it
    exists (pass `Config()` for none at all).
    """
    if config is None:
        config = _config_from_home()
    warning = None
    manifest: dict = {}
    if source is not None:
        primary, kind = Path(source), "directory"
    else:
        primary, kind = BUNDLED_DIR, "bundled"
        refreshed = catalog_home()
        if refreshed.is_dir():
            try:
                manifest = verify_refreshed(refreshed)
                primary, kind = refreshed, "refreshed"
            except CatalogError as err:
                warning = f"ignored the refreshed catalog in {refreshed}: {err.message}"
    return _load(primary, kind, manifest, warning, config)


def _config_from_home() -> Config | None:
    root = catalog_home().parent
    if not (root / "config.yaml").exists():
        return None
    from skyform.config import load_config

    return load_config(root / "config.yaml")


def verify_refreshed(directory: Path) -> dict:
    """manifest.json of a refreshed catalog, after checking every listed file's sha256."""
    import json

    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        files = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CatalogError(f"{directory / MANIFEST}: missing or unreadable ({exc})") from None
    for name, meta in sorted(files.items()):
        path = directory / name
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            raise CatalogError(f"{path}: listed in the manifest but missing") from None
        if digest != meta.get("sha256"):
            raise CatalogError(f"{path}: contents changed since it was downloaded")
    return manifest


def _load(primary: Path, kind: str, manifest: dict, warning: str | None, config) -> Catalog:
    texts: dict[str, tuple[str, str]] = {}  # table -> (where, text)
    for table in FILES:
        path = _find(primary, table) or _find(BUNDLED_DIR, table)
        if path is None:
            raise CatalogError(
                f"catalog table {table!r} found neither in {primary} nor in the bundle",
                hint="Reinstall skyform (its bundled catalog is missing).",
            )
        texts[table] = (str(path), tables.read_text(path))
    hosts = parse_hosts(*texts["gcp_hosts"])
    pricing = parse_k8s_pricing(*texts["k8s_pricing"])
    egress = parse_egress(*texts["egress"])
    gpus = parse_k8s_gpus(*texts["k8s_gpus"])
    clouds = parse_accelerator_clouds(*texts["accelerators"])
    images = _images(primary, texts["images"])

    aliases: dict[str, str] = {}
    for gpu in gpus.values():  # the first GPU with a label keeps it (H100 before H100-MEGA)
        for label in (gpu.gke_label, gpu.product_label):
            if label:
                aliases.setdefault(label, gpu.name)
    names = AcceleratorNames(set(clouds) | set(gpus), aliases)

    def aws_rows() -> list[tuple]:  # parsed the first time a query needs AWS
        aws = tables.parse_vms(texts["aws_vms"][1], texts["aws_vms"][0], "aws")
        names.extend(r[1] for r in aws if r[1])
        return aws_offer_rows(aws)

    def gcp_rows() -> list[tuple]:  # likewise for GCP
        gcp = tables.parse_vms(texts["gcp_vms"][1], texts["gcp_vms"][0], "gcp")
        names.extend(r[1] for r in gcp if r[1])
        return gcp_offer_rows(gcp, hosts)[0]

    local_row, local_src = local_offer_row(config, names.canonical)
    ssh = ssh_offer_rows(config, names.canonical, read_facts())
    digest = price_digest({t: texts[t][1] for t in DIGEST_TABLES})
    source = CatalogSource(
        kind=kind,
        path=str(primary),
        fetched_at=manifest.get("fetched_at"),
        url=manifest.get("url"),
        warning=warning,
        file_rows={t: _data_rows(texts[t][1]) for t in ("aws_vms", "gcp_vms")},
    )
    catalog = Catalog(
        [local_row, *ssh.rows],
        lazy={"aws": aws_rows, "gcp": gcp_rows},
        names=names,
        egress=egress,
        digest=digest,
        onprem_digest=onprem_digest(local_src, ssh.source),
        onprem_parts=onprem_parts(local_src, ssh.source),
        ssh_hosts=ssh,
        source=source,
        k8s_pricing=pricing,
        k8s_gpus=gpus,
        accelerator_clouds=clouds,
        images=images,
        k8s_capacity=kubernetes_capacity(config),
    )
    if kind == "directory":
        # Tables nobody has checked yet: parse them now so an error shows at load. The bundle
        # and a refreshed copy (validated when downloaded, sha-checked since) load lazily.
        catalog.all_offers()
    return catalog


def kubernetes_capacity(
    config: Config | None, env: Mapping[str, str] | None = None
) -> KubernetesCapacity:
    """Discovery of the kubeconfig's contexts (nothing is read until a query needs it)."""
    settings = config.kubernetes if config is not None else None
    return KubernetesCapacity(
        allowed=settings.allowed_contexts if settings else None,
        ttl=settings.capacity_ttl if settings else DEFAULT_CAPACITY_TTL,
        timeout=settings.timeout if settings else DEFAULT_API_TIMEOUT,
        env=os.environ if env is None else env,
        cache_path=catalog_home().parent / CACHE_FILE,
    )


def _data_rows(text: str) -> int:
    """Rows below the header, without parsing (blank lines do not count)."""
    return sum(1 for line in text.splitlines()[1:] if line.strip())


def price_digest(texts: dict[str, str]) -> str:
    """sha256 over the price tables' text, by table name, in a fixed order."""
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


def parse_k8s_pricing(where: str, text: str) -> KubernetesPricing:
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
    return KubernetesPricing(rows)


def parse_egress(where: str, text: str) -> EgressTable:
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
    return EgressTable(rows)


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


def _images(primary: Path, bundled: tuple[str, str]) -> list[Image]:
    columns = ("Tag", "Region", "OS", "OSVersion", "ImageId", "CreationDate")
    found: list[Image] = []
    refreshed = {c: primary / p for c, p in IMAGE_FILES.items() if (primary / p).is_file()}
    for cloud, path in sorted(refreshed.items()):
        for _, row in tables.parse_table(tables.read_text(path), str(path), columns):
            found.append(_image(cloud, row))
    for _, row in tables.parse_table(bundled[1], bundled[0], ("Cloud", *columns)):
        if row["Cloud"] not in refreshed:
            found.append(_image(row["Cloud"], row))
    return found


def _image(cloud: str, row: dict) -> Image:
    return Image(
        cloud=cloud,
        tag=row["Tag"],
        region=row["Region"],
        image_id=row["ImageId"],
        os=row["OS"],
        os_version=row["OSVersion"],
        creation_date=row["CreationDate"],
    )
