"""Offers for machines the user already has: this machine (`local`) and ssh node pools.

Both come from config.yaml, not from the price catalog, so they get their own digest
(`onprem_digest`) over exactly the config values they were made from.

- `local`: one offer, region/zone/instance type `local`; vCPUs and memory from `local:` in
  config.yaml, else detected from the OS; accelerators and price from config (price 0 by
  default); capacity unbounded (N nodes are N directories on this machine).
- `ssh`: hosts of a pool with identical (region, zone, spot, instance_type labels, cpus, memory,
  accelerators, price) form one offer whose `capacity` is the number of such hosts. Region
  defaults to the pool name, zone to the region. What a host does not declare (`cpus`,
  `memory`, `accelerators`; its architecture) comes from `skyform check`'s probe of it
  (hostfacts.py); a host neither declared nor probed gives an offer with unknown vCPUs/memory,
  which only matches requests that do not constrain them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from skyform.digests import sha256_hex
from skyform.errors import ConfigError
from skyform.plan.catalog.hostfacts import HostFacts
from skyform.plan.catalog.offer import format_count

if TYPE_CHECKING:  # importing skyform.config pulls in pydantic, which the catalog avoids
    from skyform.config import Config, SSHHost, SSHPool

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


def host_id(pool_name: str, pool: SSHPool, host: SSHHost) -> str:
    """How state names a pool host: `ssh/<pool>/<host>:<port>`."""
    return f"ssh/{pool_name}/{host.host}:{host.port or pool.port}"


class HostValues(NamedTuple):
    """A pool host as the catalog groups it: declared values first, then probed ones."""

    region: str
    zone: str
    spot: bool
    instance_type: str | None
    cpus: float | None
    memory: float | None
    accelerator: str | None
    accelerator_count: float
    price: float
    arch: str
    probed: HostFacts | None  # the probe whose values filled a gap, if one did


def host_values(
    pool_name: str,
    pool: SSHPool,
    host: SSHHost,
    facts: Mapping[str, HostFacts],
    canonical=None,
) -> HostValues:
    labels = host.labels
    region = labels.region or pool_name
    probe = facts.get(host_id(pool_name, pool, host))
    index = next((i for i, h in enumerate(pool.hosts) if h is host), 0)
    where = f"ssh_pools.{pool_name}.hosts[{index}].accelerators"
    acc, count = _one_accelerator(dict(host.accelerators), where)
    cpus, memory = host.cpus, host.memory
    used = None
    if probe is not None:
        if cpus is None and probe.cpus is not None:
            cpus, used = probe.cpus, probe
        if memory is None and probe.memory is not None:
            memory, used = probe.memory, probe
        if not host.accelerators and probe.accelerator:
            acc, count, used = probe.accelerator, probe.accelerator_count, probe
    price = host.hourly_price if host.hourly_price is not None else pool.hourly_price
    return HostValues(
        region=region,
        zone=labels.zone or region,
        spot=bool(labels.spot),
        instance_type=labels.instance_type,
        cpus=cpus,
        memory=memory,
        accelerator=_canonical_name(canonical, acc) if canonical is not None else acc,
        accelerator_count=count,
        price=float(price),
        arch=(probe.arch if probe is not None and probe.arch else "x86_64"),
        probed=used,
    )


class SSHRows(NamedTuple):
    rows: list[tuple]  # offer rows
    source: list[Any]  # the values they were made from (the on-prem digest)
    members: list[list[str]]  # per row: the host ids of its group, in config order
    vague: list[str]  # hosts whose cpus or memory nobody declared or probed
    probes: dict[str, HostFacts]  # host id -> the probe whose values a row uses
    # host id -> its container runtime as `check` last probed it ("" none, None never)
    runtimes: dict[str, str | None] | None = None


def ssh_offer_rows(
    config: Config | None, canonical, facts: Mapping[str, HostFacts] | None = None
) -> SSHRows:
    """Offer rows for every ssh pool in config.yaml (hosts with equal values form one offer
    whose capacity is their number), filling undeclared values from `skyform check` probes."""
    found = SSHRows([], [], [], [], {}, {})
    if config is None:
        return found
    facts = facts or {}
    runtimes: dict[str, str | None] = found.runtimes  # type: ignore[assignment]
    for pool_name in sorted(config.ssh_pools):
        pool = config.ssh_pools[pool_name]
        groups: dict[tuple, list[str]] = {}
        for host in pool.hosts:
            v = host_values(pool_name, pool, host, facts, canonical)
            ident = host_id(pool_name, pool, host)
            probe = facts.get(ident)
            runtimes[ident] = probe.container_runtime if probe is not None else None
            key = (*v[:10],)
            groups.setdefault(key, []).append(ident)
            if v.cpus is None or v.memory is None:
                found.vague.append(ident)
            if v.probed is not None:
                found.probes[ident] = v.probed
        names_used: dict[tuple, int] = {}
        for key, hosts in groups.items():  # config order: dicts keep insertion order
            region, zone, spot, itype, cpus, memory, acc, count, price, arch = key
            name = itype or instance_name(cpus, memory, acc, count)
            seen = names_used.get((region, zone, spot, name), 0)
            names_used[(region, zone, spot, name)] = seen + 1
            if seen:  # same labels, different specs or price: keep ids unique
                name = f"{name}#{seen + 1}"
            specs = (acc, count, cpus, memory, arch, None, pool_name, len(hosts))
            found.rows.append(("ssh", region, zone, name, spot, price, *specs))
            found.source.append([pool_name, *key, len(hosts)])
            found.members.append(hosts)
    return found


def onprem_parts(local_source: dict[str, Any] | None, ssh_source: list[Any]) -> dict[str, str]:
    """A digest per on-prem source: `local`, and `ssh/<pool>` for every pool. A plan records
    the digest of only the sources its tasks can use, so a cloud-only plan does not go stale
    because this machine has more cores than the one that made it."""
    parts = {"local": sha256_hex(repr(sorted((local_source or {}).items())))}
    pools: dict[str, list[Any]] = {}
    for entry in ssh_source:
        pools.setdefault(entry[0], []).append(entry)
    for pool, entries in sorted(pools.items()):
        parts[f"ssh/{pool}"] = sha256_hex(repr(entries))
    return parts


def scoped_digest(parts: dict[str, str], scope: Iterable[str]) -> str:
    """sha256 over the named parts (`ssh` alone means every pool); absent ones count too."""
    keys: set[str] = set()
    for key in scope:
        if key == "ssh":
            keys |= {k for k in parts if k.startswith("ssh/")}
        keys.add(key)
    payload = repr(sorted((k, parts.get(k, "absent")) for k in keys))
    return sha256_hex(payload)


def onprem_digest(local_source: dict[str, Any] | None, ssh_source: list[Any]) -> str:
    """sha256 over the config values the local and ssh offers were made from."""
    local = sorted(local_source.items()) if local_source else None
    payload = repr(("local", local, "ssh", ssh_source))  # plain values: repr is canonical
    return sha256_hex(payload)
