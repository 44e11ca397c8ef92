"""The cost views as frozen pydantic models: what `--json` prints and the renderers read.

Money and hours are rounded like the plan's (`Money`), so JSON output is stable.
"""

from __future__ import annotations

from typing import Literal

from pydantic import model_serializer

from skyform.frozen import Frozen as _Model
from skyform.plan.model import Action, BlockedPlacement, EgressFlow, Money, PlacedOffer

# --- skyform cost PLAN ---------------------------------------------------------------------


class ClusterCost(_Model):
    """One cluster of a plan. `egress_*` is the data moved *into* this cluster's task.

    `on_demand_hourly_cost` / `spot_saving` are None for on-demand offers and for spot offers
    whose on-demand twin (same cloud, region, zone, instance type) the catalog does not sell.
    """

    cluster: str
    task: str
    action: Action | None
    offer: PlacedOffer
    num_nodes: int
    hourly_cost: Money
    estimated_hours: Money
    compute_cost: Money
    egress_gb: Money = 0.0
    egress_cost: Money = 0.0
    total_cost: Money
    on_demand_hourly_cost: Money | None = None
    spot_saving: Money | None = None
    # with autostop: the idle tail the node agent allows before compute stops (its minutes
    # plus one check interval), and compute at most (estimated hours + that tail) x hourly
    autostop: str | None = None
    idle_hours: Money | None = None
    compute_bound: Money | None = None

    @model_serializer(mode="wrap")
    def _without_autostop(self, handler):
        data = handler(self)
        if data.get("autostop") is None:  # views of plans without autostop keep their bytes
            for key in ("autostop", "idle_hours", "compute_bound"):
                data.pop(key, None)
        return data


class PlanCostTotals(_Model):
    hourly_before: Money
    hourly_after: Money
    estimated_hours: Money
    compute_cost: Money
    egress_cost: Money
    total_cost: Money
    spot_saving: Money  # sum over the spot clusters whose twin is known
    spot_saving_unknown: int = 0  # spot clusters without an on-demand twin


class PlanCost(_Model):
    task_path: str
    objective: str
    destroy: bool
    catalog_digest: str  # the plan's
    twin_catalog_digest: str | None = None  # the catalog the on-demand twins came from
    clusters: list[ClusterCost] = []
    deleted: list[str] = []  # clusters the plan destroys
    egress: list[EgressFlow] = []
    totals: PlanCostTotals

    @property
    def twins_from_other_catalog(self) -> bool:
        return (
            self.twin_catalog_digest is not None and self.twin_catalog_digest != self.catalog_digest
        )


# --- skyform cost diff / plan --check --------------------------------------------------------

ReasonKind = Literal[
    "task_path",
    "relative_to",
    "task_file",
    "task",
    "catalog",
    "onprem",
    "sources",
    "state",
    "objective",
    "overrides",
    "version",
    "destroy",
    "blocked",
    "allowed",
]


class Reason(_Model):
    """One difference in what a plan was made from (not in what it decided)."""

    kind: ReasonKind
    message: str
    before: str | None = None
    after: str | None = None


class ClusterSide(_Model):
    """A cluster as one plan has it. `offer` is None when the plan does not place it (delete)."""

    action: Action | None = None
    offer: PlacedOffer | None = None
    num_nodes: int = 0
    hourly_cost: Money = 0.0
    estimated_hours: Money = 0.0
    estimated_cost: Money = 0.0


DeltaKind = Literal["added", "removed", "changed", "unchanged"]


class ClusterDelta(_Model):
    cluster: str
    kind: DeltaKind
    before: ClusterSide | None = None  # None: not in the old plan
    after: ClusterSide | None = None  # None: not in the new plan
    moved: bool = False  # placed on another offer (infra, instance type or spot)
    notes: list[str] = []  # what else changed, in words ("nodes 1 → 2")

    @property
    def hourly_delta(self) -> float:
        return _side_value(self.after, "hourly_cost") - _side_value(self.before, "hourly_cost")

    @property
    def estimated_delta(self) -> float:
        return _side_value(self.after, "estimated_cost") - _side_value(
            self.before, "estimated_cost"
        )


def _side_value(side: ClusterSide | None, name: str) -> float:
    return 0.0 if side is None else float(getattr(side, name))


class Totals(_Model):
    hourly_before: Money
    hourly_after: Money
    estimated_before: Money
    estimated_after: Money
    egress_before: Money
    egress_after: Money


class PlanComparison(_Model):
    old_label: str
    new_label: str
    reasons: list[Reason] = []
    clusters: list[ClusterDelta] = []
    blocked: list[BlockedPlacement] = []  # the new plan's
    newly_blocked: list[BlockedPlacement] = []  # in the new plan, not in the old one
    allowed: list[BlockedPlacement] = []  # the new plan's "only these" (recovery FAILOVER)
    totals: Totals

    @property
    def changed_clusters(self) -> list[ClusterDelta]:
        return [c for c in self.clusters if c.kind != "unchanged"]

    @property
    def totals_changed(self) -> bool:
        t = self.totals
        return (t.hourly_before, t.estimated_before, t.egress_before) != (
            t.hourly_after,
            t.estimated_after,
            t.egress_after,
        )


class PlanCheck(_Model):
    """`plan --check`: is the committed plan what planning writes now, and if not, why."""

    up_to_date: bool
    comparison: PlanComparison
    # Raw JSON lines that differ, shown only when no reason or cluster change explains the
    # difference (a hand-edited or reformatted file).
    raw_diff: list[str] = []


# --- skyform cost reprice --------------------------------------------------------------------

RepriceStatus = Literal["same", "changed", "missing"]


class RepricedCluster(_Model):
    cluster: str
    offer_id: str
    offer: PlacedOffer
    num_nodes: int
    estimated_hours: Money
    status: RepriceStatus
    old_hourly_price: Money  # per node
    new_hourly_price: Money | None = None  # None: the catalog no longer sells the offer
    old_cost: Money
    new_cost: Money | None = None


class RepricedFlow(_Model):
    flow: EgressFlow
    new_cost: Money


class Reprice(_Model):
    task_path: str
    plan_catalog_digest: str
    catalog_digest: str
    onprem_changed: bool = False  # local/ssh prices come from config.yaml, not the catalog
    catalog_kind: str  # bundled | refreshed | directory | fixture
    catalog_path: str
    clusters: list[RepricedCluster] = []
    egress: list[RepricedFlow] = []
    old_total: Money
    new_total: Money  # clusters that are gone count at their old price (see `missing`)

    @property
    def missing(self) -> list[RepricedCluster]:
        return [c for c in self.clusters if c.status == "missing"]


# --- skyform cost-report ---------------------------------------------------------------------


class IntervalCost(_Model):
    id: int
    cluster: str
    offer: PlacedOffer
    num_nodes: int
    hourly_cost: Money  # recorded price per node × nodes
    started_at: float
    ended_at: float | None
    seconds: Money  # inside the report window; an open interval counts up to `now`
    cost: Money
    managed_job_id: int | None = None
    reason: str = ""


class UsageRow(_Model):
    """One cluster name, or one managed job across all its recoveries."""

    name: str
    managed_job_id: int | None = None
    launched_at: float
    seconds: Money
    offer: PlacedOffer  # the latest interval's
    num_nodes: int
    status: str
    hourly_cost: Money  # the latest interval's recorded hourly cost
    cost: Money
    recoveries: int = 0
    intervals: list[IntervalCost] = []


class UsageReport(_Model):
    now: float
    since: float | None = None
    clusters: list[UsageRow] = []
    managed_jobs: list[UsageRow] = []
    total_cost: Money = 0.0
