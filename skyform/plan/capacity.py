"""ssh pool hosts a plan can have: not the ones other clusters hold, and not more at once than
the pool has (pure).

Every cluster of a plan is up at the same time once applied (a pipeline's clusters stay up),
so the tasks placed on one host group must fit into its free hosts together. A plan that does
not fit is refused when it is made (exit 4), never half-applied.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from skyform.errors import NoOffersError
from skyform.plan.catalog import Catalog
from skyform.plan.catalog.hostfacts import HostFacts
from skyform.plan.model import HostProbe, TaskPlacement


def busy_hosts(reserved: Mapping[str, str], names: Iterable[str]) -> frozenset[str]:
    """Hosts reserved by clusters this plan does not name (its own clusters keep theirs)."""
    mine = set(names)
    return frozenset(host for host, cluster in reserved.items() if cluster not in mine)


def holders(catalog: Catalog, offer_id: str, reserved: Mapping[str, str], busy) -> list[str]:
    return sorted({reserved[h] for h in catalog.ssh_members(offer_id) if h in busy})


def check_joint_capacity(
    placements: list[TaskPlacement],
    catalog: Catalog,
    reserved: Mapping[str, str],
    busy: frozenset[str],
) -> None:
    """Refuse a plan whose tasks need more hosts of one ssh group than are free together."""
    need: dict[str, list[TaskPlacement]] = {}
    for p in placements:
        if p.offer.cloud == "ssh" and p.offer.capacity is not None:
            need.setdefault(_offer_id(p), []).append(p)
    for offer_id, tasks in need.items():
        offer = tasks[0].offer
        members = catalog.ssh_members(offer_id)
        free = (offer.capacity or 0) - sum(h in busy for h in members)
        wanted = sum(t.num_nodes for t in tasks)
        if wanted <= free:
            continue
        held = holders(catalog, offer_id, reserved, busy)
        names = ", ".join(t.task for t in tasks)
        raise NoOffersError(
            f"ssh pool {offer.context!r}: tasks {names} need {wanted} hosts of "
            f"{offer.instance_type} ({offer.infra}) at once, but {free} of {offer.capacity} "
            "are free" + (f" (the others are held by {', '.join(held)})" if held else ""),
            "Take a cluster down (skyform down NAME), add hosts to the pool, or ask for fewer "
            "nodes; nothing was applied.",
        )


def _offer_id(placement: TaskPlacement) -> str:
    from skyform.plan.catalog.offer import Offer

    return Offer(**placement.offer.model_dump()).id


def probes_used(catalog: Catalog, scope: Iterable[str]) -> list[HostProbe]:
    return [_probe(host, facts) for host, facts in catalog.host_probes(scope).items()]


def _probe(host: str, facts: HostFacts) -> HostProbe:
    return HostProbe(
        host=host,
        cpus=facts.cpus,
        memory_gib=facts.memory,
        accelerators=(
            f"{facts.accelerator}:{facts.accelerator_count:g}" if facts.accelerator else None
        ),
        arch=facts.arch,
        probed_at=facts.probed_at,
    )
