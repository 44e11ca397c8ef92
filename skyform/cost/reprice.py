"""`skyform cost reprice PLAN`: the same placements priced against another (current) catalog.

Each offer is looked up by its id; one the catalog no longer sells is reported as missing and
keeps its planned price in the totals (never a crash: SkyPilot's cost report fails on a vanished
offer, its issue #2780). Egress is priced again from the catalog's egress table.
"""

from __future__ import annotations

from typing import Any

from skyform.cost.estimate import catalog_offer, find_offer
from skyform.cost.model import Reprice, RepricedCluster, RepricedFlow
from skyform.plan.catalog import Catalog, Location
from skyform.plan.model import EgressFlow, Plan, TaskPlacement, money


def location_of(infra: str) -> Location:
    """The inverse of the planner's egress infra string `cloud[/region[/zone]]`."""
    parts = infra.split("/")
    return Location(
        parts[0], parts[1] if len(parts) > 1 else None, parts[2] if len(parts) > 2 else None
    )


def _cluster(t: TaskPlacement, catalog: Catalog) -> RepricedCluster:
    offer = catalog_offer(t.offer)
    now = find_offer(catalog, offer)
    common: dict[str, Any] = dict(
        cluster=t.cluster,
        offer_id=offer.id,
        offer=t.offer,
        num_nodes=t.num_nodes,
        estimated_hours=t.estimated_hours,
        old_hourly_price=t.offer.hourly_price,
        old_cost=t.estimated_cost,
    )
    if now is None:
        return RepricedCluster(status="missing", **common)
    price = money(now.hourly_price)
    return RepricedCluster(
        status="same" if price == t.offer.hourly_price else "changed",
        new_hourly_price=price,
        new_cost=price * t.num_nodes * t.estimated_hours,
        **common,
    )


def _flow(flow: EgressFlow, catalog: Catalog) -> RepricedFlow:
    cost = catalog.egress_cost(
        location_of(flow.src_infra), location_of(flow.dst_infra), flow.gigabytes
    )
    return RepricedFlow(flow=flow, new_cost=cost)


def reprice(plan: Plan, catalog: Catalog) -> Reprice:
    clusters = [] if plan.destroy else [_cluster(t, catalog) for t in plan.tasks]
    flows = [] if plan.destroy else [_flow(f, catalog) for f in plan.egress]
    return Reprice(
        task_path=plan.task.path,
        plan_catalog_digest=plan.catalog_digest,
        catalog_digest="sha256:" + catalog.digest,
        onprem_changed="sha256:" + catalog.onprem_digest_for(plan.onprem_scope)
        != plan.onprem_digest,
        catalog_kind=catalog.source.kind,
        catalog_path=catalog.source.path,
        clusters=clusters,
        egress=flows,
        old_total=sum(c.old_cost for c in clusters) + sum(f.flow.cost for f in flows),
        new_total=sum(c.old_cost if c.new_cost is None else c.new_cost for c in clusters)
        + sum(f.new_cost for f in flows),
    )
