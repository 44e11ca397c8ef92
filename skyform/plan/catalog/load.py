"""Loading the catalog: the bundled index, a refreshed one under SKYFORM_HOME, or a directory.

The bundle (`skyform/plan/data/`) holds `index.sqlite` (index.py), built by
scripts/build_catalog.py from gzip-compressed copies of ../shared/catalog that sit beside it.
`skyform catalog refresh` writes SkyPilot's own layout (`aws/vms.csv`, `gcp/vms.csv`, optional
`aws/images.csv`, `gcp/images.csv`, `common/accelerators.csv`), `manifest.json` and an index
built from them (plus, for what a refreshed copy lacks — GCP accelerator hosts, Kubernetes
tables, egress — the bundle's tables) to SKYFORM_HOME/catalog. Loading opens an index and
reads only its small tables; offers are read when a query asks for them.

A refreshed index that is missing, of an older format, damaged, or not built from the files
its manifest lists is rebuilt from those files (after checking their sha256); when that fails
too, the bundle is used with a warning. A directory given as `source` uses its `index.sqlite`
if it has one, else its CSVs are parsed and indexed in memory.

`digest` is a sha256 over the cloud price data as loaded: the decompressed text of the AWS and
GCP VM tables, GCP accelerator hosts, Kubernetes pricing and egress, each tagged with its table
name and hashed in a fixed order (computed when the index is built and stored in it). It does
not depend on file paths, compression or the order in which files are read; a file whose rows
are merely reordered counts as different (a plan is then reported stale, never wrongly fresh).
Local/ssh offers get `onprem_digest` instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from skyform.digests import sha256_hex
from skyform.errors import CatalogError
from skyform.infra import PRICED
from skyform.plan.catalog.accelerators import AcceleratorNames
from skyform.plan.catalog.catalog import Catalog, CatalogSource, Image
from skyform.plan.catalog.clouds import PRICED_ROWS, vm_files, vm_table
from skyform.plan.catalog.egress import EgressRow, EgressTable
from skyform.plan.catalog.hostfacts import read_facts
from skyform.plan.catalog.index import INDEX_FILE, OfferIndex
from skyform.plan.catalog.k8s_capacity import CACHE_FILE, KubernetesCapacity
from skyform.plan.catalog.kubernetes import GpuInfo, KubernetesPricing, PricingRow
from skyform.plan.catalog.onprem import (
    local_offer_row,
    onprem_digest,
    onprem_parts,
    ssh_offer_rows,
)

if TYPE_CHECKING:
    from skyform.config import Config
    from skyform.plan.catalog.index_build import Source

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "data"
MANIFEST = "manifest.json"
DEFAULT_CAPACITY_TTL = 300.0  # keep in step with skyform.config.KubernetesSettings
DEFAULT_API_TIMEOUT = 5.0

# logical table -> (file in SkyPilot's layout (refreshed copies), file in the bundle): each
# priced cloud's VM table (`<cloud>_vms`, from its row in the infra table), then the rest
FILES: dict[str, tuple[str | None, str]] = {
    **{vm_table(r.name): vm_files(r) for r in PRICED_ROWS},
    "gcp_hosts": (None, "gcp_accelerator_hosts.csv"),
    "accelerators": ("common/accelerators.csv", "accelerators.csv"),
    "images": (None, "images.csv"),
    "k8s_pricing": ("kubernetes/pricing.csv", "k8s_pricing_default.csv"),
    "k8s_gpus": (None, "k8s_gpu_labels.csv"),
    "egress": (None, "egress.csv"),
}
IMAGE_FILES = {c: f"{c}/images.csv" for c in PRICED}  # refreshed layout, no Cloud col


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
    index: OfferIndex | None = None
    if source is not None:
        primary, kind = Path(source), "directory"
        index = directory_index(primary)
    else:
        primary, kind = catalog_home(), "refreshed"
        if primary.is_dir():
            try:
                manifest = read_manifest(primary)
                index = refreshed_index(primary, manifest)
            except CatalogError as err:
                warning = f"ignored the refreshed catalog in {primary}: {err.message}"
                manifest = {}
        if index is None:
            primary, kind = BUNDLED_DIR, "bundled"
            index = OfferIndex.open(BUNDLED_DIR / INDEX_FILE)
    return catalog_from_index(index, kind, primary, manifest, warning, config)


def _config_from_home() -> Config | None:
    root = catalog_home().parent
    if not os.path.lexists(root / "config.yaml"):  # a link loop there is read, and refused
        return None
    from skyform.config import load_config

    return load_config(root / "config.yaml")


def read_manifest(directory: Path) -> dict:
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        if not all(isinstance(meta["sha256"], str) for meta in manifest["files"].values()):
            raise TypeError("a file without its sha256")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CatalogError(f"{directory / MANIFEST}: missing or unreadable ({exc})") from None
    return manifest


def verify_refreshed(directory: Path) -> dict:
    """manifest.json of a refreshed catalog, after checking every listed file's sha256."""
    manifest = read_manifest(directory)
    for name, meta in sorted(manifest["files"].items()):
        path = directory / name
        try:
            digest = sha256_hex(path.read_bytes())
        except OSError:
            raise CatalogError(f"{path}: listed in the manifest but missing") from None
        if digest != meta.get("sha256"):
            raise CatalogError(f"{path}: contents changed since it was downloaded")
    return manifest


def sources_digest(manifest: dict) -> str:
    """Which downloaded files (by sha256) an index was built from."""
    listed = sorted((name, meta["sha256"]) for name, meta in manifest["files"].items())
    return sha256_hex(json.dumps(listed))


def refreshed_index(directory: Path, manifest: dict) -> OfferIndex:
    """The refreshed copy's index; rebuilt (atomically) when missing, outdated or damaged."""
    path = directory / INDEX_FILE
    expected = sources_digest(manifest)
    try:
        index = OfferIndex.open(path)
        if index.meta.get("sources") == expected:
            return index
    except CatalogError:
        pass  # rebuilt below, from files whose sha256 is checked first
    verify_refreshed(directory)
    return build_from_directory(directory, path, sources=expected)


def directory_index(directory: Path) -> OfferIndex:
    if (directory / INDEX_FILE).is_file():
        return OfferIndex.open(directory / INDEX_FILE)
    return build_from_directory(directory, None)


def build_from_directory(
    directory: Path,
    target: Path | None,
    sources: str = "",
    parsed: Mapping[str, tuple[str, list[tuple]]] | None = None,
) -> OfferIndex:
    """Parse (strictly) the CSVs of `directory`, the bundle's for what it lacks, and index them
    at `target` (in memory when None, or when `target` cannot be written). `parsed`: VM tables
    the caller parsed already (index_build.parse_sources)."""
    from skyform.plan.catalog.index_build import build_index, parse_sources

    content = parse_sources(read_sources(directory), _refreshed_images(directory), parsed)
    content.sources = sources
    try:
        return build_index(content, target)
    except OSError:
        return build_index(content, None)


def read_sources(primary: Path) -> dict[str, Source]:
    """table -> (where, text) for every logical table, from `primary` else the bundle."""
    from skyform.plan.catalog import tables

    texts: dict[str, tuple[str, str]] = {}
    for table in FILES:
        path = _find(primary, table) or _find(BUNDLED_DIR, table)
        if path is None:
            raise CatalogError(
                f"catalog table {table!r} found neither in {primary} nor in the bundle",
                hint="Reinstall skyform (its bundled catalog is missing).",
            )
        texts[table] = (str(path), tables.read_text(path))
    return texts


def _refreshed_images(primary: Path) -> dict[str, Source]:
    from skyform.plan.catalog import tables

    found = {c: primary / p for c, p in IMAGE_FILES.items() if (primary / p).is_file()}
    return {cloud: (str(path), tables.read_text(path)) for cloud, path in found.items()}


def catalog_from_index(
    index: OfferIndex, kind: str, primary: Path, manifest: dict, warning: str | None, config
) -> Catalog:
    gpus = {g.name: g for g in (GpuInfo(*row) for row in index.small_table("k8s_gpus"))}
    clouds = index.accelerator_clouds()
    aliases: dict[str, str] = {}
    for gpu in gpus.values():  # the first GPU with a label keeps it (H100 before H100-MEGA)
        for label in (gpu.gke_label, gpu.product_label):
            if label:
                aliases.setdefault(label, gpu.name)
    names = AcceleratorNames(set(clouds) | set(gpus), aliases)
    for cloud in index.clouds:
        names.extend(index.vm_accelerators(cloud))
    local_row, local_src = local_offer_row(config, names.canonical)
    # probed facts only fill in ssh hosts (reading them needs skyform.config: pydantic)
    facts = read_facts() if config is not None and config.ssh_pools else {}
    ssh = ssh_offer_rows(config, names.canonical, facts)
    source = CatalogSource(
        kind=kind,
        path=str(primary),
        fetched_at=manifest.get("fetched_at"),
        url=manifest.get("url"),
        warning=warning,
        file_rows=index.file_rows(),
    )
    return Catalog(
        index,
        [local_row, *ssh.rows],
        names=names,
        egress=EgressTable([EgressRow(*row) for row in index.small_table("egress")]),
        onprem_digest=onprem_digest(local_src, ssh.source),
        onprem_parts=onprem_parts(local_src, ssh.source),
        ssh_hosts=ssh,
        source=source,
        k8s_pricing=KubernetesPricing([PricingRow(*r) for r in index.small_table("k8s_pricing")]),
        k8s_gpus=gpus,
        accelerator_clouds=clouds,
        images=[Image(*row) for row in index.small_table("images")],
        k8s_capacity=kubernetes_capacity(config),
    )


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
