"""`Catalog`: every offer the planner can choose from, indexed for fast filtered queries.

Offers are stored as tuples in `offer.FIELDS` order, bucketed by (cloud, accelerator); a query
scans only the buckets it can match and builds `Offer` objects for the rows it returns.

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
Results are sorted by the offers' total order (price, cloud, region, zone, instance type, spot).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple

from skyform.plan.catalog.accelerators import AcceleratorNames
from skyform.plan.catalog.egress import EgressTable
from skyform.plan.catalog.hostfacts import HostFacts
from skyform.plan.catalog.k8s_capacity import KubernetesCapacity
from skyform.plan.catalog.k8s_offers import KubernetesOffers
from skyform.plan.catalog.kubernetes import GpuInfo, KubernetesPricing
from skyform.plan.catalog.offer import (
    ACCEL,
    ACCEL_COUNT,
    CONTEXT,
    INSTANCE_TYPE,
    MEMORY,
    PRICE,
    PRICED_CLOUDS,
    REGION,
    SPOT,
    VCPUS,
    ZONE,
    Location,
    Offer,
    offer_id,
    row_sort_key,
)
from skyform.plan.catalog.onprem import SSHRows


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


def _bound(spec: Any) -> tuple[float, bool] | None:
    """(value, at_least) from None, a number, or a Range-like object."""
    if spec is None:
        return None
    if isinstance(spec, (int, float)):
        return float(spec), True
    return float(spec.value), bool(spec.at_least)


class Catalog:
    def __init__(
        self,
        rows: list[tuple],
        *,
        names: AcceleratorNames,
        egress: EgressTable,
        digest: str,
        onprem_digest: str,
        source: CatalogSource,
        k8s_pricing: KubernetesPricing | None = None,
        k8s_gpus: dict[str, GpuInfo] | None = None,
        accelerator_clouds: dict[str, list[str]] | None = None,
        images: list[Image] | None = None,
        default_clouds: tuple[str, ...] = PRICED_CLOUDS,
        lazy: dict[str, Callable[[], list[tuple]]] | None = None,
        onprem_parts: dict[str, str] | None = None,
        ssh_hosts: SSHRows | None = None,
        k8s_capacity: KubernetesCapacity | None = None,
    ) -> None:
        self.egress = egress
        self.digest = digest
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
        self._buckets: dict[tuple[str, str | None], list[tuple]] = {}
        self._add(rows)
        # Clouds whose tables are parsed the first time a query needs them (most plans need
        # one or two clouds; parsing every table costs most of a plan's start-up).
        self._lazy = dict(lazy or {})
        # (sort key, row) pairs per bucket, sorted; built the first time a query needs the bucket
        self._keyed: dict[tuple[str, str | None], list[tuple[tuple, tuple]]] = {}
        self._offers: dict[int, Offer] = {}
        self._by_id: dict[str, Offer] | None = None

    def _add(self, rows: Iterable[tuple]) -> None:
        for row in rows:
            self._buckets.setdefault((row[0], row[ACCEL]), []).append(row)

    def _ensure(self, clouds: Iterable[str] | None = None) -> None:
        """Parse the lazily loaded tables of `clouds` (None: all of them)."""
        wanted = list(self._lazy) if clouds is None else [c for c in clouds if c in self._lazy]
        for cloud in wanted:
            loader = self._lazy.pop(cloud)
            self._add(loader())
            self._keyed.clear()
            self._by_id = None

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
        limit: int | None = None,
    ) -> list[Offer]:
        """Offers matching every given filter, cheapest first (see the module docstring);
        `limit` keeps only the first N (building Offer objects is most of a big query's cost)."""
        acc = None
        if accelerator is not None:
            acc = self.canonical_accelerator(accelerator)
            if acc is None:
                return []
        selected = self._clouds(cloud, clouds)
        self._ensure(selected)
        cpu_bound, mem_bound = _bound(cpus), _bound(memory)
        found: list[tuple[tuple, tuple]] = []
        for name in selected:
            if name == "kubernetes":
                rows = self.kubernetes.rows(
                    context or region,
                    cpu_bound[0] if cpu_bound else None,
                    mem_bound[0] if mem_bound else None,
                    acc,
                    accelerator_count,
                    min_accelerator_count,
                )
                pairs = [(row_sort_key(row), row) for row in rows]
                where: tuple[str | None, str | None, str | None] = (None, zone, None)
            else:
                pairs = self._candidates(name, acc, accelerator_count, min_accelerator_count)
                where = (region, zone, context)
            counts = (accelerator_count, min_accelerator_count)
            sizes = (cpu_bound, mem_bound)
            found.extend(_filter(pairs, where, counts, sizes, instance_type, spot, max_price))
        found.sort(key=_first)
        if limit is not None:
            del found[limit:]
        return [self._offer(row) if row[0] != "kubernetes" else Offer(*row) for _, row in found]

    def offer(self, offer_id: str) -> Offer | None:
        """The offer with this id (see `Offer.id`), if the catalog still has it."""
        self._ensure()
        if self._by_id is None:
            self._by_id = {}
            for rows in self._buckets.values():
                for row in rows:
                    found = self._offer(row)
                    self._by_id[found.id] = found
        return self._by_id.get(offer_id)

    def all_offers(self, clouds: Iterable[str] | None = None) -> list[Offer]:
        self._ensure(clouds)
        return self.query(clouds=clouds if clouds is not None else self.clouds())

    # --- accelerators, regions, images ----------------------------------------------------

    def canonical_accelerator(self, name: str) -> str | None:
        """The catalog's spelling of an accelerator name (case-insensitive, aliases), or None."""
        found = self._names.canonical(name)
        if found is None and self._lazy:  # maybe a name only the cloud tables know (TPU sizes)
            self._ensure()
            found = self._names.canonical(name)
        return found

    def suggest_accelerators(self, name: str, limit: int = 5) -> list[str]:
        """Close matches for an unknown accelerator name, best first (for error messages)."""
        self._ensure()
        return self._names.suggest(name, limit)

    def accelerator_names(self) -> list[str]:
        """Accelerators that at least one offer in this catalog carries."""
        self._ensure()
        return sorted({acc for (_, acc) in self._buckets if acc is not None})

    def accelerator_clouds(self, name: str) -> list[str]:
        """Every SkyPilot cloud that offers `name` (accelerators.csv), including clouds skyform
        does not run on — for "A10 is only on Azure, Lambda, OCI" messages."""
        canonical = self.canonical_accelerator(name) or name
        return list(self._accelerator_clouds.get(canonical, []))

    def clouds(self) -> list[str]:
        return sorted({cloud for (cloud, _) in self._buckets} | set(self._lazy))

    def regions(self, cloud: str) -> list[str]:
        return sorted({row[REGION] for row in self._cloud_rows(cloud)})

    def zones(self, cloud: str, region: str) -> list[str]:
        rows = self._cloud_rows(cloud)
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
        self._ensure()
        return sum(len(rows) for rows in self._buckets.values())

    def offer_counts(self) -> dict[str, int]:
        """Offers per cloud (Kubernetes offers are synthesised per request: not counted)."""
        self._ensure()
        counts: dict[str, int] = {}
        for (cloud, _), rows in self._buckets.items():
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

    def _cloud_rows(self, cloud: str) -> list[tuple]:
        self._ensure([cloud])
        return [row for key in self._buckets if key[0] == cloud for row in self._buckets[key]]

    def _candidates(self, cloud, acc, count, min_count) -> list[tuple[tuple, tuple]]:
        if acc is not None:
            keys = [(cloud, acc)]
        elif count == 0:
            keys = [(cloud, None)]
        else:
            wants_accelerator = (count or 0) > 0 or (min_count or 0) > 0
            keys = [k for k in self._buckets if k[0] == cloud and (k[1] or not wants_accelerator)]
        if len(keys) == 1:
            return self._keyed_bucket(keys[0])
        return [pair for key in keys for pair in self._keyed_bucket(key)]

    def _keyed_bucket(self, key: tuple[str, str | None]) -> list[tuple[tuple, tuple]]:
        pairs = self._keyed.get(key)
        if pairs is None:
            # Inline form of row_sort_key (a call per row would double the cost).
            pairs = [
                ((r[5], r[0], r[1], r[2] or "", r[3], r[4], r[6] or "", r[7], r[12] or ""), r)
                for r in self._buckets.get(key, ())
            ]
            pairs.sort(key=_first)
            self._keyed[key] = pairs
        return pairs

    def _instance_accelerator(self, instance_type: str) -> tuple[str, float] | None:
        """(GPU, count) of a cloud instance type (an EKS node without a GPU label)."""
        for offer in self.query(clouds=self._lazy_and_priced(), instance_type=instance_type):
            if offer.accelerator:
                return offer.accelerator, offer.accelerator_count
        return None

    def _lazy_and_priced(self) -> list[str]:
        return sorted({c for c in self.clouds() if c not in ("local", "ssh", "kubernetes")})

    def _offer(self, row: tuple) -> Offer:
        # Keyed by identity: only for rows the catalog keeps (never synthesised ones), so an id
        # is never reused by another row while cached.
        key = id(row)
        found = self._offers.get(key)
        if found is None:
            found = self._offers[key] = Offer(*row)
        return found


_first = itemgetter(0)  # sort (key, row) pairs by key only (C speed)


def _filter(pairs, where, counts, sizes, instance_type, spot, max_price) -> list:
    region, zone, context = where
    count, min_count = counts
    cpu_bound, mem_bound = sizes
    out = []
    for pair in pairs:
        row = pair[1]
        if region is not None and row[REGION] != region:
            continue
        if zone is not None and row[ZONE] != zone:
            continue
        if context is not None and row[CONTEXT] != context:
            continue
        if count is not None and row[ACCEL_COUNT] != count:
            continue
        if min_count is not None and row[ACCEL_COUNT] < min_count:
            continue
        if spot is not None and row[SPOT] != spot:
            continue
        if max_price is not None and row[PRICE] > max_price:
            continue
        if instance_type is not None and row[INSTANCE_TYPE] != instance_type:
            continue
        if cpu_bound is not None and not _fits(row[VCPUS], cpu_bound):
            continue
        if mem_bound is not None and not _fits(row[MEMORY], mem_bound):
            continue
        out.append(pair)
    return out


def _fits(have: float | None, bound: tuple[float, bool]) -> bool:
    if have is None:
        return False
    value, at_least = bound
    return have >= value if at_least else have == value
