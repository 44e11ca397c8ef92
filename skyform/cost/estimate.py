"""`skyform cost PLAN`: a saved plan's cost per cluster, with egress and spot savings.

Every figure except the on-demand twin comes from the plan itself (prices as planned); the twin
of a spot offer — same cloud, region, zone and instance type, on-demand — is looked up in the
catalog given, which need not be the plan's (PlanCost says which one it was).
"""

from __future__ import annotations

import dataclasses

from skyform.cost.model import ClusterCost, PlanCost, PlanCostTotals
from skyform.plan.catalog import Catalog, Offer
from skyform.plan.model import Action, AutostopSetting, PlacedOffer, Plan, TaskPlacement, money


def catalog_offer(placed: PlacedOffer) -> Offer:
    return Offer(**placed.model_dump())


def find_offer(catalog: Catalog, offer: Offer) -> Offer | None:
    """The catalog's offer with the same identity (`Offer.id`) as `offer`, if it still sells it.

    Kubernetes offers are synthesised per request, so they are asked for again with the same
    shape instead of looked up by id.
    """
    if offer.cloud == "kubernetes":
        found = catalog.query(
            cloud="kubernetes",
            context=offer.context,
            region=offer.region,
            cpus=offer.vcpus,
            memory=offer.memory_gib,
            accelerator=offer.accelerator,
            accelerator_count=offer.accelerator_count if offer.accelerator else None,
            spot=offer.spot,
        )
        return next((o for o in found if o.instance_type == offer.instance_type), None)
    return catalog.offer(offer.id)


def on_demand_twin(catalog: Catalog, placed: PlacedOffer) -> Offer | None:
    """The on-demand offer of the same cloud/region/zone/instance type as a spot offer."""
    if not placed.spot:
        return None
    return find_offer(catalog, dataclasses.replace(catalog_offer(placed), spot=False))


def _cluster_cost(plan: Plan, t: TaskPlacement, catalog: Catalog | None) -> ClusterCost:
    flows = [f for f in plan.egress if f.dst_task == t.task]
    egress = sum(f.cost for f in flows)
    twin = on_demand_twin(catalog, t.offer) if catalog is not None else None
    twin_hourly = money(twin.hourly_price * t.num_nodes) if twin is not None else None
    change = plan.change_for(t.cluster)
    setting = change.after.autostop if change is not None and change.after is not None else None
    idle = idle_tail_hours(setting) if setting is not None else None
    return ClusterCost(
        autostop=setting.short if setting is not None else None,
        idle_hours=idle,
        compute_bound=None if idle is None else t.hourly_cost * (t.estimated_hours + idle),
        cluster=t.cluster,
        task=t.task,
        action=change.action if change is not None else None,
        offer=t.offer,
        num_nodes=t.num_nodes,
        hourly_cost=t.hourly_cost,
        estimated_hours=t.estimated_hours,
        compute_cost=t.estimated_cost,
        egress_gb=sum(f.gigabytes for f in flows),
        egress_cost=egress,
        total_cost=t.estimated_cost + egress,
        on_demand_hourly_cost=twin_hourly,
        spot_saving=(
            None if twin_hourly is None else twin_hourly * t.estimated_hours - t.estimated_cost
        ),
    )


AGENT_CHECK_HOURS = 1 / 60  # the node agent looks once a minute: the stop can be that late


def idle_tail_hours(setting: AutostopSetting) -> float:
    """How long an idle cluster keeps its compute before autostop stops or tears it down."""
    minutes = min(m for m in (setting.stop_after, setting.down_after) if m is not None)
    return minutes / 60 + AGENT_CHECK_HOURS


def needs_catalog(plan: Plan) -> bool:
    """Only spot offers need a catalog (for their on-demand twin); skip loading one otherwise."""
    return any(t.offer.spot for t in plan.tasks)


def plan_cost(plan: Plan, catalog: Catalog | None) -> PlanCost:
    clusters = [] if plan.destroy else [_cluster_cost(plan, t, catalog) for t in plan.tasks]
    spot = [c for c in clusters if c.offer.spot]
    s = plan.summary
    return PlanCost(
        task_path=plan.task.path,
        objective=plan.objective,
        destroy=plan.destroy,
        catalog_digest=plan.catalog_digest,
        twin_catalog_digest=("sha256:" + catalog.digest) if catalog is not None and spot else None,
        clusters=clusters,
        deleted=[c.cluster for c in plan.changes if c.action is Action.DELETE],
        egress=[] if plan.destroy else list(plan.egress),
        totals=PlanCostTotals(
            hourly_before=s.hourly_before,
            hourly_after=s.hourly_after,
            estimated_hours=s.estimated_hours,
            compute_cost=sum(c.compute_cost for c in clusters),
            egress_cost=sum(c.egress_cost for c in clusters),
            total_cost=s.estimated_cost,
            spot_saving=sum(c.spot_saving for c in spot if c.spot_saving is not None),
            spot_saving_unknown=sum(1 for c in spot if c.spot_saving is None),
        ),
    )
