"""`Catalog`: every offer the planner can choose from, indexed for fast filtered queries.

Priced offers live in the catalog index (index.py, SQLite): a query is one SQL statement per
cloud over the (cloud, accelerator, count) range it can match, and builds `Offer` objects only
for the rows it returns. Offers of this machine and ssh pools (from config.yaml) are kept as
tuples in `offer.FIELDS` order and filtered the same way in Python.

Query conventions (all filters optional, combined with AND):
- `cloud` / `clouds`: which clouds; by default `default_clouds`, the price-catalog clouds (aws,
  gcp; cloud-a and cloud-b for the test fixture). local, ssh and kubernetes offers are returned
  only when named, since they are free or synthesised and would otherwise win every comparison.
  Kubernetes offers come from the nodes each planned context really has (k8s_offers.py).
- `accelerator`: any spelling `canonical_accelerator` accepts; an unknown name matches nothing.
  `accelerator_count` is exact (`V100:8` means exactly 8, as in SkyPilot; 0 means CPU-only);
  `min_accelerator_count` is a lower bound. Without an accelerator filter, GPU offers match too.
- `cpus` / `memory` (GiB): None, a number (= at least that much), or any object with `value`
  and `at_least` attributes (the spec's `Range`; `at_least=False` means exactly). Offers whose
  vCPUs/memory are unknown (TPU VMs, ssh hosts without `cpus:`/`memory:`) match only when the
  corresponding filter is None.
- `spot`: None = both, True/False = only spot / only on-demand.
- `max_price`: hourly price per node, inclusive.
- `min_memory_per_vcpu`: memory >= this × vCPUs (SkyPilot's default 4 GiB per vCPU).
- `arch`: only offers of this architecture (`x86_64`, `arm64`).
- `cheapest_per_place`: of the index's offers (priced clouds), only the cheapest per (cloud,
  region, zone, accelerator, count, spot) — the only one the optimizer can choose there. Exact
  only if every filter the caller applies that can tell two offers of one place apart is given
  here (see candidates.py). Offers of local, ssh and Kubernetes (few, and told apart by their
  capacity) are all returned.
Results are sorted by the offers' total order (price, cloud, region, zone, instance type, spot).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from skyform.infra import PRICED
from skyform.plan.catalog.accelerators import AcceleratorNames
from skyform.plan.catalog.egress import EgressTable
from skyform.plan.catalog.hostfacts import HostFacts
from skyform.plan.catalog.index import OfferFilter, OfferIndex
from skyform.plan.catalog.k8s_capacity import KubernetesCapacity
from skyform.plan.catalog.k8s_offers import KubernetesOffers
from skyform.plan.catalog.kubernetes import GpuInfo, KubernetesPricing
from skyform.plan.catalog.offer import (
    ACCEL,
    REGION,
    ZONE,
    Location,
    Offer,
    offer_id,
    row_sort_key,
)
from skyform.plan.catalog.onprem import SSHRows
from skyform.plan.catalog.rowfilter import bound, filter_rows


@dataclass(frozen=True)
class CatalogSource:
    """Where the loaded data came from (for `skyform catalog show` and plan provenance)."""

    kind: str  # "bundled" | "refreshed" | "fixture" | "directory"
    path: str
    fetched_at: str | None = None  # ISO time of the refresh, refreshed catalogs only
    url: str | None = None
    warning: str | None = None  # e.g. why a refreshed copy was ignored
    file_rows: dict[str, int] = field(default_factory=dict)


class Image(NamedTuple):
    cloud: str
    tag: str
    region: str  # "" = any region (GCP global images, Kubernetes)
    image_id: str
    os: str
    os_version: str
    creation_date: str


class Catalog:
    """Offers of the price index (aws, gcp; the fixture's clouds) and of `rows` (this machine,
    ssh pools), plus Kubernetes offers synthesised per request."""

    def __init__(
        self,
        index: OfferIndex,
        rows: list[tuple],
        *,
        names: AcceleratorNames,
        egress: EgressTable,
        onprem_digest: str,
        source: CatalogSource,
        k8s_pricing: KubernetesPricing | None = None,
        k8s_gpus: dict[str, GpuInfo] | None = None,
        accelerator_clouds: dict[str, list[str]] | None = None,
        images: list[Image] | None = None,
        default_clouds: tuple[str, ...] = PRICED,
        onprem_parts: dict[str, str] | None = None,
        ssh_hosts: SSHRows | None = None,
        k8s_capacity: KubernetesCapacity | None = None,
    ) -> None:
        self._index = index
        self.egress = egress
        self.digest = index.digest
        self.onprem_digest = onprem_digest
        self._onprem_parts = dict(onprem_parts or {})
        self._ssh = ssh_hosts or SSHRows([], [], [], [], {})
        self._ssh_members = {
            offer_id(Offer(*row)): tuple(hosts)
            for row, hosts in zip(self._ssh.rows, self._ssh.members, strict=True)
        }
        self.source = source
        self.k8s_pricing = k8s_pricing or KubernetesPricing([])
        self.k8s_gpus = k8s_gpus or {}
        # Offers from the nodes each kubeconfig context really has (read when first asked).
        self.kubernetes = KubernetesOffers(
            self.k8s_pricing,
            self.k8s_gpus,
            k8s_capacity,
            self.canonical_accelerator,
            self._instance_accelerator,
        )
        self._names = names
        self.default_clouds = default_clouds
        self._accelerator_clouds = accelerator_clouds or {}
        self._images = images or []
        self._rows: dict[str, list[tuple]] = {}  # local / ssh rows, by cloud
        for row in rows:
            self._rows.setdefault(row[0], []).append(row)

    # --- queries -------------------------------------------------------------------------

    def query(
        self,
        *,
        cloud: str | None = None,
        clouds: Iterable[str] | None = None,
        region: str | None = None,
        zone: str | None = None,
        context: str | None = None,
        accelerator: str | None = None,
        accelerator_count: float | None = None,
        min_accelerator_count: float | None = None,
        cpus: Any = None,
        memory: Any = None,
        instance_type: str | None = None,
        spot: bool | None = None,
        max_price: float | None = None,
        min_memory_per_vcpu: float | None = None,
        arch: str | None = None,
        cheapest_per_place: bool = False,
        limit: int | None = None,
    ) -> list[Offer]:
        """Offers matching every given filter, cheapest first (see the module docstring);
        `limit` keeps only the first N."""
        acc = None
        if accelerator is not None:
            acc = self.canonical_accelerator(accelerator)
            if acc is None:
                return []
        where = OfferFilter(
            accelerator=acc,
            count=accelerator_count,
            min_count=min_accelerator_count,
            region=region,
            zone=zone,
            context=context,
            instance_type=instance_type,
            spot=spot,
            max_price=max_price,
            cpus=bound(cpus),
            memory=bound(memory),
            memory_per_vcpu=min_memory_per_vcpu,
            arch=arch,
        )
        parts: list[list[tuple]] = []
        for name in self._clouds(cloud, clouds):
            if name in self._index.clouds:
                rows = self._index.offers(
                    name, where, cheapest_per_place=cheapest_per_place, limit=limit
                )
                parts.append([_from_index(row) for row in rows])
                continue
            if name == "kubernetes":
                rows = self.kubernetes.rows(
                    context or region,
                    where.cpus[0] if where.cpus else None,
                    where.memory[0] if where.memory else None,
                    acc,
                    accelerator_count,
                    min_accelerator_count,
                )
                kept = filter_rows(rows, where, ignore_place=True)
            else:
                kept = filter_rows(self._rows.get(name, ()), where)
            kept.sort(key=row_sort_key)
            parts.append(kept)
        found = parts[0] if len(parts) == 1 else [row for part in parts for row in part]
        if len(parts) > 1:
            found.sort(key=row_sort_key)
        if limit is not None:
            del found[limit:]
        return [Offer(*row) for row in found]

    def offer(self, offer_id: str) -> Offer | None:
        """The offer with this id (see `Offer.id`), if the catalog still has it."""
        parts = offer_id.split("/")
        cloud = parts[0]
        if cloud in self._index.clouds and len(parts) == 5:
            _, region, zone, machine, _kind = parts
            types = dict.fromkeys((machine, machine.split("+")[0]))
            for itype in types:
                at = self._index.at(cloud, region, "" if zone == "-" else zone, itype)
                for row in at:
                    found = Offer(*_from_index(row))
                    if found.id == offer_id:
                        return found
            return None
        for row in self._rows.get(cloud, ()):
            found = Offer(*row)
            if found.id == offer_id:
                return found
        return None

    def all_offers(self, clouds: Iterable[str] | None = None) -> list[Offer]:
        return self.query(clouds=clouds if clouds is not None else self.clouds())

    def accelerator_counts(
        self, clouds: Iterable[str] | None = None, region: str | None = None
    ) -> dict[tuple[str, str], set[float]]:
        """(accelerator, cloud) -> the counts of it offered (in `region` if given), read from
        the index without building an offer."""
        found: dict[tuple[str, str], set[float]] = {}
        for name in self._clouds(None, clouds):
            if name in self._index.clouds:
                where, params = "AND accelerator != '' AND accelerator_count > 0", []
                if region is not None:
                    where, params = where + " AND region = ?", [region]
                pairs = self._index.distinct(name, "accelerator, accelerator_count", where, params)
            else:
                offers = self.query(cloud=name, region=region)
                pairs = [
                    (o.accelerator, o.accelerator_count)
                    for o in offers
                    if o.accelerator and o.accelerator_count > 0
                ]
            for acc, count in pairs:
                found.setdefault((acc, name), set()).add(count)
        return found

    # --- accelerators, regions, images ----------------------------------------------------

    def canonical_accelerator(self, name: str) -> str | None:
        """The catalog's spelling of an accelerator name (case-insensitive, aliases), or None."""
        return self._names.canonical(name)

    def suggest_accelerators(self, name: str, limit: int = 5) -> list[str]:
        """Close matches for an unknown accelerator name, best first (for error messages)."""
        return self._names.suggest(name, limit)

    def accelerator_names(self) -> list[str]:
        """Accelerators that at least one offer in this catalog carries."""
        names = {row[ACCEL] for rows in self._rows.values() for row in rows if row[ACCEL]}
        for cloud in self._index.clouds:
            names.update(self._index.distinct(cloud, "accelerator", "AND accelerator != ''"))
        return sorted(names)

    def accelerator_clouds(self, name: str) -> list[str]:
        """Every SkyPilot cloud that offers `name` (accelerators.csv), including clouds skyform
        does not run on — for "A10 is only on Azure, Lambda, OCI" messages."""
        canonical = self.canonical_accelerator(name) or name
        return list(self._accelerator_clouds.get(canonical, []))

    def clouds(self) -> list[str]:
        return sorted(set(self._index.clouds) | set(self._rows))

    def regions(self, cloud: str) -> list[str]:
        if cloud in self._index.clouds:
            return self._index.distinct(cloud, "region")
        return sorted({row[REGION] for row in self._rows.get(cloud, ())})

    def zones(self, cloud: str, region: str) -> list[str]:
        if cloud in self._index.clouds:
            return [z for z in self._index.distinct(cloud, "zone", "AND region = ?", [region]) if z]
        rows = self._rows.get(cloud, ())
        return sorted({row[ZONE] for row in rows if row[REGION] == region and row[ZONE]})

    def image_for(self, cloud: str, region: str | None, tag: str) -> str | None:
        """Image id for a SkyPilot image tag (`skypilot:gpu-ubuntu-2204` or without prefix)."""
        wanted = tag if tag.startswith("skypilot:") else f"skypilot:{tag}"
        for image in self._images:
            if image.cloud == cloud and image.tag == wanted and image.region in ("", region):
                return image.image_id
        return None

    def images(self) -> list[Image]:
        return list(self._images)

    def offer_count(self) -> int:
        return sum(self.offer_counts().values())

    def offer_counts(self) -> dict[str, int]:
        """Offers per cloud (Kubernetes offers are synthesised per request: not counted)."""
        counts = dict(self._index.offer_counts)
        for cloud, rows in self._rows.items():
            counts[cloud] = counts.get(cloud, 0) + len(rows)
        return dict(sorted(counts.items()))

    def onprem_digest_for(self, scope: Iterable[str]) -> str:
        """Digest of the on-prem sources in `scope` (`local`, `ssh/<pool>`, or `ssh`)."""
        from skyform.plan.catalog.onprem import scoped_digest

        return scoped_digest(self._onprem_parts, scope)

    def egress_cost(self, source: Location, destination: Location, gb: float) -> float:
        return self.egress.cost(source, destination, gb)

    def ssh_members(self, offer_id: str) -> tuple[str, ...]:
        """The host ids (`ssh/<pool>/<host>:<port>`) an ssh offer stands for."""
        return self._ssh_members.get(offer_id, ())

    def container_runtimes(self, offer_id: str) -> dict[str, str | None]:
        """Host id -> the container runtime `skyform check` found there ("" none found,
        None never probed), for the hosts an ssh offer stands for."""
        known = self._ssh.runtimes or {}
        return {host: known.get(host) for host in self.ssh_members(offer_id)}

    def host_probes(self, scope: Iterable[str]) -> dict[str, HostFacts]:
        """Probed facts the offers of the ssh pools in `scope` were made from."""
        pools = set(scope)
        return {
            host: facts
            for host, facts in sorted(self._ssh.probes.items())
            if "ssh" in pools or f"ssh/{host.split('/')[1]}" in pools
        }

    def no_offers_hint(
        self, *, clouds: Iterable[str] | None = None, cpus: Any = None, memory: Any = None
    ) -> str | None:
        """Why ssh pools cannot match a cpus/memory-constrained request, if that is why:
        which hosts declare no cpus/memory and were not probed, and what to do."""
        if cpus is None and memory is None:
            return None
        if "ssh" not in self._clouds(None, clouds) or not self._ssh.vague:
            return None
        hosts = self._ssh.vague
        shown = ", ".join(h.removeprefix("ssh/") for h in hosts[:6])
        more = f" and {len(hosts) - 6} more" if len(hosts) > 6 else ""
        return (
            f"ssh host(s) {shown}{more} declare no cpus/memory and have not been probed, so "
            "they only match tasks that ask for neither: run `skyform check` (it logs in and "
            "measures them), or declare them in SKYFORM_HOME/config.yaml, e.g. "
            "`- {host: 10.0.0.5, cpus: 16, memory: 64}` (memory in GiB)."
        )

    # --- internals ------------------------------------------------------------------------

    def _clouds(self, cloud: str | None, clouds: Iterable[str] | None) -> list[str]:
        if cloud is not None:
            return [cloud]
        if clouds is not None:
            return sorted(set(clouds))
        return list(self.default_clouds)

    def _instance_accelerator(self, instance_type: str) -> tuple[str, float] | None:
        """(GPU, count) of a cloud instance type (an EKS node without a GPU label)."""
        for row in self._index.by_instance_type(instance_type):
            if row[6]:
                return row[6], row[7]
        return None


def _from_index(row: tuple) -> tuple:
    """An index row (index.SELECT) as an offer row in `offer.FIELDS` order."""
    cloud, region, zone, itype, spot, price, acc, count, cpus, mem, arch, gpu_mem = row
    where = (cloud, region, zone, itype, spot == 1, price)
    return (*where, acc or None, count, cpus, mem, arch, gpu_mem, None, None)
