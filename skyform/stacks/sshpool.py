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

import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from itertools import chain, islice

from skyform.config import Config, SSHHost, SSHPool
from skyform.errors import CapacityError, NodeUnreachable, SkyformError, StackError, StateError
from skyform.plan.catalog.hostfacts import HostFacts, read_facts
from skyform.plan.catalog.onprem import host_id, host_values
from skyform.plan.model import ClusterSpec, PlacedOffer
from skyform.stacks.engine import ClusterState, EventSink, NodeState, StackPreview, no_events
from skyform.stacks.sshnodes import pool_node, probe_ssh
from skyform.state.db import StateDB
from skyform.state.models import ClusterHandle, NodeHandle


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
        others: Iterator[tuple[str, SSHHost]] = iter(h for h in healthy if h[0] not in kept)
        while len(chosen) < need:
            batch = list(islice(others, need - len(chosen)))
            if not batch:
                break
            try:
                self.state.reserve_nodes(desired.name, [i for i, _ in chosen + batch])
            except StateError:  # a cluster brought up at the same time took one of them
                taken = self.state.taken_nodes()
                lost = {i for i, _ in batch if taken.get(i) not in (None, desired.name)}
                if not lost:
                    raise
                on_event(f"skipping {', '.join(sorted(lost))}: just reserved by another cluster")
                others = chain((h for h in batch if h[0] not in lost), others)
                continue
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

    def stop(self, spec: ClusterSpec, handle: ClusterHandle, on_event: EventSink = no_events):
        """Kill the cluster's jobs and its agent; the files and the reservation stay."""
        from skyform.exec.teardown import kill_jobs

        for node in handle.nodes:
            try:
                on_event(f"node {node.rank}: {kill_jobs(node)}")
            except NodeUnreachable as err:
                on_event(f"node {node.rank}: not reachable ({err.message})")

    def start(
        self, spec: ClusterSpec, handle: ClusterHandle, on_event: EventSink = no_events
    ) -> ClusterHandle:
        """The reserved hosts must still answer (nothing else to do: files are there)."""
        from skyform.exec.connect import open_runner
        from skyform.exec.teardown import QUICK

        for node in handle.nodes:
            try:
                open_runner(node, timeouts=QUICK).close()
            except NodeUnreachable as err:
                raise SkyformError(
                    f"cluster {spec.name!r}: node {node.rank} does not answer ({err.message})",
                    f"Bring the host back, or take the cluster down: skyform down {spec.name}",
                ) from None
            on_event(f"node {node.rank}: answers; workdir and setup kept")
        return handle

    def preempt(self, handle: ClusterHandle, nodes: list[NodeHandle], on_event: EventSink) -> None:
        """Take hosts away as a spot reclaim would: their jobs are killed and each host is
        marked preempted, so `refresh` reports it dead and it is not handed out again during
        the cool-down (config `recovery.preempt_cooldown`)."""
        for node in nodes:
            end_jobs(node, on_event)
            self.state.mark_preempted(node.node_id, f"skyform debug preempt {handle.name}")


def end_jobs(node: NodeHandle, on_event: EventSink) -> None:
    """Kill every skyform job process on a node (one that does not answer is already gone)."""
    from skyform.exec.teardown import kill_jobs

    try:
        on_event(f"node {node.rank}: {kill_jobs(node)}")
    except NodeUnreachable as err:
        on_event(f"node {node.rank}: already unreachable ({err.message})")


def make(
    cloud: str, *, config: Config, state: StateDB, plan_digest: str | None = None
) -> SSHPoolEngine:
    return SSHPoolEngine(config=config, state=state)
