"""Offers for machines the user already has: this machine (`local`) and ssh node pools.

Both come from config.yaml, not from the price catalog, so they get their own digest
(`onprem_digest`) over exactly the config values they were made from.

- `local`: one offer, region/zone/instance type `local`; vCPUs and memory from `local:` in
  config.yaml, else detected from the OS; accelerators and price from config (price 0 by
  default); capacity unbounded (N nodes are N directories on this machine).
- `ssh`: hosts of a pool with identical (region, zone, spot, instance_type labels, cpus, memory,
  accelerators, price) form one offer whose `capacity` is the number of such hosts. Region
  defaults to the pool name, zone to the region. A host that does not declare `cpus`/`memory`
  gives an offer with unknown vCPUs/memory, which only matches requests that do not constrain
  them (declare them in config.yaml to use the pool for such requests).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from skyform.errors import ConfigError
from skyform.plan.catalog.offer import format_count

if TYPE_CHECKING:  # importing skyform.config pulls in pydantic, which the catalog avoids
    from skyform.config import Config

LOCAL = "local"


def detect_memory_gib() -> float | None:
    """Physical memory of this machine in GiB, or None where the OS does not say."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    if pages <= 0 or page_size <= 0:
        return None
    return round(pages * page_size / 2**30, 1)


def _one_accelerator(accelerators: dict[str, float], where: str) -> tuple[str | None, float]:
    if not accelerators:
        return None, 0.0
    if len(accelerators) > 1:
        raise ConfigError(
            f"config.yaml: {where}: lists {len(accelerators)} accelerator types "
            f"({', '.join(sorted(accelerators))}); a node offers one type",
            hint="Split the hosts into groups with one accelerator type each.",
        )
    ((name, count),) = accelerators.items()
    return name, float(count)


def instance_name(cpus: float | None, memory: float | None, acc: str | None, count: float) -> str:
    """SkyPilot-style synthesized type name: `4CPU--16GB`, `4CPU--16GB--1xT4`."""
    cpu_part = f"{format_count(cpus)}CPU" if cpus is not None else "anyCPU"
    mem_part = f"{format_count(memory)}GB" if memory is not None else "anyGB"
    name = f"{cpu_part}--{mem_part}"
    if acc:
        name += f"--{format_count(count)}x{acc}"
    return name


def local_offer_row(config: Config | None, canonical) -> tuple[tuple, dict[str, Any]]:
    """(offer row, the values it was made from) for this machine."""
    node = config.local if config is not None else None
    cpus = node.cpus if node and node.cpus else float(os.cpu_count() or 1)
    memory = node.memory if node and node.memory else detect_memory_gib()
    acc, count = _one_accelerator(dict(node.accelerators) if node else {}, "local.accelerators")
    acc = _canonical_name(canonical, acc)
    price = float(node.hourly_price) if node else 0.0
    arch = "arm64" if os.uname().machine in ("arm64", "aarch64") else "x86_64"
    specs = (acc, count, float(cpus), memory, arch, None, None, None)
    return (LOCAL, LOCAL, LOCAL, LOCAL, False, price, *specs), {
        "cpus": cpus,
        "memory": memory,
        "accelerator": acc,
        "count": count,
        "price": price,
    }


def _canonical_name(canonical, name: str | None) -> str | None:
    if name is None:
        return None
    found = canonical(name)
    # Unknown names (a GPU the catalog has never heard of) are kept as written: the user's
    # hardware is what it is, and a task naming the same GPU still matches.
    return found or name


def ssh_offer_rows(config: Config | None, canonical) -> tuple[list[tuple], list[Any]]:
    """(offer rows, the values they were made from) for every ssh pool in config.yaml."""
    if config is None:
        return [], []
    rows: list[tuple] = []
    source: list[Any] = []
    for pool_name in sorted(config.ssh_pools):
        pool = config.ssh_pools[pool_name]
        groups: dict[tuple, int] = {}
        for i, host in enumerate(pool.hosts):
            labels = host.labels
            region = labels.region or pool_name
            zone = labels.zone or region
            price = host.hourly_price if host.hourly_price is not None else pool.hourly_price
            where = f"ssh_pools.{pool_name}.hosts[{i}].accelerators"
            acc, count = _one_accelerator(dict(host.accelerators), where)
            acc = _canonical_name(canonical, acc)
            spot, itype = bool(labels.spot), labels.instance_type
            key = (region, zone, spot, itype, host.cpus, host.memory, acc, count, float(price))
            groups[key] = groups.get(key, 0) + 1
        names_used: dict[tuple, int] = {}
        for key, capacity in groups.items():  # config order: dicts keep insertion order
            region, zone, spot, itype, cpus, memory, acc, count, price = key
            name = itype or instance_name(cpus, memory, acc, count)
            seen = names_used.get((region, zone, spot, name), 0)
            names_used[(region, zone, spot, name)] = seen + 1
            if seen:  # same labels, different specs or price: keep ids unique
                name = f"{name}#{seen + 1}"
            specs = (acc, count, cpus, memory, "x86_64", None, pool_name, capacity)
            rows.append(("ssh", region, zone, name, spot, price, *specs))
            source.append([pool_name, *key, capacity])
    return rows, source


def onprem_parts(local_source: dict[str, Any] | None, ssh_source: list[Any]) -> dict[str, str]:
    """A digest per on-prem source: `local`, and `ssh/<pool>` for every pool. A plan records
    the digest of only the sources its tasks can use, so a cloud-only plan does not go stale
    because this machine has more cores than the one that made it."""
    parts = {
        "local": hashlib.sha256(repr(sorted((local_source or {}).items())).encode()).hexdigest()
    }
    pools: dict[str, list[Any]] = {}
    for entry in ssh_source:
        pools.setdefault(entry[0], []).append(entry)
    for pool, entries in sorted(pools.items()):
        parts[f"ssh/{pool}"] = hashlib.sha256(repr(entries).encode()).hexdigest()
    return parts


def scoped_digest(parts: dict[str, str], scope: Iterable[str]) -> str:
    """sha256 over the named parts (`ssh` alone means every pool); absent ones count too."""
    keys: set[str] = set()
    for key in scope:
        if key == "ssh":
            keys |= {k for k in parts if k.startswith("ssh/")}
        keys.add(key)
    payload = repr(sorted((k, parts.get(k, "absent")) for k in keys))
    return hashlib.sha256(payload.encode()).hexdigest()


def onprem_digest(local_source: dict[str, Any] | None, ssh_source: list[Any]) -> str:
    """sha256 over the config values the local and ssh offers were made from."""
    local = sorted(local_source.items()) if local_source else None
    payload = repr(("local", local, "ssh", ssh_source))  # plain values: repr is canonical
    return hashlib.sha256(payload.encode()).hexdigest()
