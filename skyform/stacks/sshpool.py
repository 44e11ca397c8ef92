"""The `ssh` engine: clusters made of hosts reserved from a node pool in config.yaml.

Provisioning is reservation: `up` claims N free hosts whose labels match the planned offer
(region, zone, spot, instance type, cpus, memory, accelerators, price), in config order,
all or nothing, in the state database — so two clusters never share a host. A host newly
reserved is cleaned first (a previous cluster's jobs stopped, its workdir and job files
removed): teardown skips a host that does not answer, such as one just preempted, so a host
coming back must not hand its old files to the next cluster. `destroy` stops skyform's
processes on the hosts, removes what skyform put there, and releases them.
"""

from __future__ import annotations

import getpass
import os
import socket
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from itertools import islice

from skyform.config import Config, SSHHost, SSHPool
from skyform.errors import CapacityError, NodeUnreachable, StackError
from skyform.plan.catalog.hostfacts import HostFacts, read_facts
from skyform.plan.catalog.onprem import host_id, host_values
from skyform.plan.model import ClusterSpec, PlacedOffer
from skyform.stacks.engine import ClusterState, EventSink, NodeState, StackPreview, no_events
from skyform.state.db import StateDB
from skyform.state.models import ClusterHandle, NodeHandle, NodeKind


def probe_ssh(host: str, port: int, timeout: float = 2.0) -> str | None:
    """None when an SSH server answers with its banner, else a short reason."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            banner = sock.recv(64)
    except TimeoutError:
        return "timed out"
    except OSError as exc:
        return exc.strerror or str(exc)
    if not banner.startswith(b"SSH-"):
        return "answered, but not with an SSH banner"
    return None


def host_matches(
    pool_name: str,
    pool: SSHPool,
    host: SSHHost,
    offer: PlacedOffer,
    facts: Mapping[str, HostFacts] | None = None,
) -> bool:
    """Does this host belong to the offer's group? The catalog groups hosts by the same
    values (declared, else probed by `skyform check`), so plan and apply agree."""
    v = host_values(pool_name, pool, host, facts or {})
    if v.instance_type and v.instance_type != offer.instance_type.split("#")[0]:
        return False
    return (
        v.region == offer.region
        and v.zone == offer.zone
        and v.spot == offer.spot
        and v.cpus == offer.vcpus
        and v.memory == offer.memory_gib
        and (v.accelerator or "").lower() == (offer.accelerator or "").lower()
        and float(v.accelerator_count) == float(offer.accelerator_count)
        and abs(v.price - offer.hourly_price) < 1e-9
    )


class SSHPoolEngine:
    name = "ssh"

    def __init__(self, *, config: Config, state: StateDB) -> None:
        self.config = config
        self.state = state

    def _pool(self, offer: PlacedOffer) -> tuple[str, SSHPool]:
        name = offer.context or ""
        pool = self.config.ssh_pools.get(name)
        if pool is None:
            known = ", ".join(sorted(self.config.ssh_pools)) or "none"
            raise StackError(
                f"ssh pool {name!r} is not in config.yaml (pools: {known})",
                "Add it under ssh_pools: in $SKYFORM_HOME/config.yaml, then plan again.",
                nothing_made=True,
            )
        return name, pool

    def _candidates(self, desired: ClusterSpec) -> list[tuple[str, SSHHost]]:
        pool_name, pool = self._pool(desired.offer)
        facts = read_facts()
        return [
            (host_id(pool_name, pool, h), h)
            for h in pool.hosts
            if host_matches(pool_name, pool, h, desired.offer, facts)
        ]

    def preview(self, desired: ClusterSpec) -> StackPreview:
        taken = self.state.taken_nodes()
        free = [i for i, _ in self._candidates(desired) if taken.get(i) in (None, desired.name)]
        return StackPreview(
            cluster=desired.name,
            engine=self.name,
            changes={"reserve": desired.num_nodes},
            detail=[f"{len(free)} matching hosts free"],
        )

    def _preempted(self) -> dict[str, float]:
        cutoff = time.time() - self.config.recovery.preempt_cooldown
        return self.state.preempted_since(cutoff)

    def _healthy(
        self, hosts: list[tuple[str, SSHHost]], pool: SSHPool, on_event: EventSink
    ) -> list[tuple[str, SSHHost]]:
        """The hosts whose sshd answers (in order): a dead host is never reserved."""
        if not hosts:
            return []
        with ThreadPoolExecutor(max_workers=min(16, len(hosts))) as ex:
            reasons = list(
                ex.map(
                    lambda ih: probe_ssh(ih[1].host, ih[1].port or pool.port, timeout=2.0), hosts
                )
            )
        alive = []
        for (node_id, host), reason in zip(hosts, reasons, strict=True):
            if reason is None:
                alive.append((node_id, host))
            else:
                on_event(f"skipping {node_id}: {reason}")
        return alive

    def up(self, desired: ClusterSpec, on_event: EventSink = no_events) -> ClusterHandle:
        pool_name, pool = self._pool(desired.offer)
        taken = self.state.taken_nodes()
        preempted = self._preempted()
        candidates = [(i, h) for i, h in self._candidates(desired) if i not in preempted]
        # Hosts this cluster already holds (an interrupted apply) come first, then free ones.
        mine = [(i, h) for i, h in candidates if taken.get(i) == desired.name]
        free = [(i, h) for i, h in candidates if i not in taken]
        healthy = self._healthy(mine + free, pool, on_event)
        chosen = self._claim(desired, healthy, {i for i, _ in mine}, pool, on_event)
        if len(chosen) < desired.num_nodes:
            busy = sorted(
                {taken[i] for i, _ in candidates if taken.get(i) not in (None, desired.name)}
            )
            raise CapacityError(
                f"ssh pool {pool_name!r} has {len(chosen)} free, healthy host(s) matching "
                f"{desired.offer.infra} ({desired.offer.instance_type}"
                f"{', spot' if desired.offer.spot else ''}) but cluster {desired.name!r} needs "
                f"{desired.num_nodes}" + (f"; in use by: {', '.join(busy)}" if busy else ""),
                "Take a cluster down (skyform down NAME), add hosts to the pool, or plan "
                "again with fewer nodes.",
                nothing_made=True,  # what it reserved is released by the caller
            )
        nodes = []
        for rank, (node_id, host) in enumerate(chosen):
            nodes.append(pool_node(rank, node_id, host, pool))
            on_event(f"node {rank}: reserved {node_id}")
        return ClusterHandle(
            name=desired.name,
            engine=self.name,
            infra=desired.offer.infra,
            offer=desired.offer,
            nodes=nodes,
        )

    def _claim(
        self,
        desired: ClusterSpec,
        healthy: list[tuple[str, SSHHost]],
        kept: set[str],
        pool: SSHPool,
        on_event: EventSink,
    ) -> list[tuple[str, SSHHost]]:
        """Reserve the hosts the cluster keeps, then free ones, in order: each newly reserved
        host is cleaned, and one that cannot be is released and replaced by the next."""
        need = desired.num_nodes
        chosen = [h for h in healthy if h[0] in kept][:need]
        others = iter(h for h in healthy if h[0] not in kept)
        while len(chosen) < need:
            batch = list(islice(others, need - len(chosen)))
            if not batch:
                break
            self.state.reserve_nodes(desired.name, [i for i, _ in chosen + batch])
            failed = self._clean(batch, pool, on_event)
            self.state.release_nodes(desired.name, sorted(failed))
            chosen += [h for h in batch if h[0] not in failed]
        self.state.clear_preempted([i for i, _ in chosen])
        return chosen

    def _clean(
        self, hosts: list[tuple[str, SSHHost]], pool: SSHPool, on_event: EventSink
    ) -> set[str]:
        """Remove a previous cluster's jobs and files; the ids of hosts that are gone (refused
        or dropped the connection). Any other SSH failure is raised."""
        from skyform.exec.teardown import teardown_node

        def one(item: tuple[str, SSHHost]) -> str | None:
            try:
                on_event(f"{item[0]}: {teardown_node(pool_node(0, *item, pool))}")
                return None
            except NodeUnreachable as err:
                if not err.node_is_gone:  # a wrong key or a changed host key: the user's to
                    # fix, not skipped; nothing was made on any host (reservations are undone)
                    raise StackError(err.message, err.hint, nothing_made=True) from None
                on_event(f"skipping {item[0]}: cannot clean it up: {err.message}")
                return item[0]

        with ThreadPoolExecutor(max_workers=min(16, len(hosts))) as ex:
            return {i for i in ex.map(one, hosts) if i is not None}

    def refresh(self, handle: ClusterHandle) -> ClusterState:
        """Alive: sshd answers, and the host was not marked preempted (`debug preempt`, a
        detected preemption) since it was reserved."""
        states = []
        marked = self.state.preempted_since(0.0)
        for node in handle.nodes:
            reason = probe_ssh(node.host, node.port, timeout=2.0)
            if reason is None and node.node_id in marked:
                reason = "the host was preempted"
            states.append(
                NodeState(
                    rank=node.rank, node_id=node.node_id, alive=reason is None, detail=reason or ""
                )
            )
        return ClusterState(name=handle.name, exists=True, nodes=states)

    def destroy(self, handle: ClusterHandle, on_event: EventSink = no_events) -> None:
        from skyform.exec.teardown import teardown_nodes

        teardown_nodes(handle.nodes, on_event=on_event)
        self.state.release_nodes(handle.name)
        on_event(f"released {len(handle.nodes)} host(s)")


def pool_node(rank: int, node_id: str, host: SSHHost, pool: SSHPool) -> NodeHandle:
    """How to reach a pool host (its user and key, else the pool's)."""
    identity = host.identity_file or pool.identity_file
    return NodeHandle(
        rank=rank,
        kind=NodeKind.SSH,
        host=host.host,
        port=host.port or pool.port,
        user=host.user or pool.user or getpass.getuser(),
        identity_file=os.path.expanduser(identity) if identity else None,
        ip=host.host,
        node_id=node_id,
    )
