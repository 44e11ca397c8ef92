"""The pydantic-free half of the plan models: the values (Action, money) and the behaviour
(properties, lookups) of the plan's parts, as mixins.

The pydantic models (plan/cluster_model.py, plan/model.py) and the strict reader of the fast
path (plan/planview.py) both derive from these, so `show` of a saved plan renders through
the same code without importing pydantic (~0.08 s of a cold process). Leaf module: the
standard library and skyform.digests only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any

from skyform.digests import sha256_hex
from skyform.infra import infra_path

PRICE_DIGITS = 6  # every money and hour figure is rounded so float noise never reaches a file
WAIT_FOR_DEFAULT = "jobs_and_ssh"
HOOK_TIMEOUT_DEFAULT = 3600
STORE_SCHEMES = {"s3": "s3", "gcs": "gs", "r2": "r2"}


def money(value: float) -> float:
    return round(float(value), PRICE_DIGITS) + 0.0  # + 0.0 turns -0.0 into 0.0


class Action(str, Enum):
    """Terraform's verbs. `replace` counts as one add and one destroy in the summary."""

    CREATE = "create"
    UPDATE = "update"
    REPLACE = "replace"
    DELETE = "delete"
    NOOP = "noop"

    @property
    def symbol(self) -> str:
        return ACTION_SYMBOLS[self]


ACTION_SYMBOLS = {
    Action.CREATE: "+",
    Action.UPDATE: "~",
    Action.REPLACE: "-/+",
    Action.DELETE: "-",
    Action.NOOP: " ",
}


def count_actions(changes: Iterable[Any]) -> tuple[int, int, int]:
    """Clusters (to add, to change, to destroy) as Terraform counts them: replace = add +
    destroy. Buckets are counted apart (count_buckets)."""
    add = change = destroy = 0
    for c in changes:
        add += c.action in (Action.CREATE, Action.REPLACE)
        change += c.action is Action.UPDATE
        destroy += c.action in (Action.DELETE, Action.REPLACE)
    return add, change, destroy


def count_buckets(buckets: Iterable[Any]) -> tuple[int, int]:
    """Buckets (to create, to upload again)."""
    add = change = 0
    for b in buckets:
        add += b.action is Action.CREATE
        change += b.action is Action.UPDATE
    return add, change


def minutes_text(minutes: int) -> str:
    """`90` -> `90m`, `120` -> `2h`, `10080` -> `7d`: the largest unit that divides it."""
    for unit, size in (("d", 1440), ("h", 60)):
        if minutes >= size and minutes % size == 0:
            return f"{minutes // size}{unit}"
    return f"{minutes}m"


def member_host(task: str, rank: int, group: str) -> str:
    """The name node `rank` of `task` is reached by from every task of a job group
    (`execution: parallel`, SkyPilot's `<task>-<rank>.<group>`)."""
    return f"{task}-{rank}.{group}"


class OfferShape:
    """PlacedOffer's behaviour."""

    if TYPE_CHECKING:
        cloud: str
        region: str
        zone: str | None
        context: str | None
        accelerator: str | None
        accelerator_count: float

    @property
    def infra(self) -> str:
        """As task YAML writes infra: `aws/us-east-1/use1-az4`, `ssh/lab/west/west-a`,
        `kubernetes/my-context`, `local`."""
        return infra_path(self.cloud, self.region, self.zone, self.context)

    @property
    def accelerators(self) -> dict[str, float]:
        return {self.accelerator: self.accelerator_count} if self.accelerator else {}


PLACEMENT_KEYS = ("cloud", "context", "region", "zone", "instance_type", "spot")


class PlacementShape:
    """BlockedPlacement's behaviour: None in any field is a wildcard."""

    def matches(self, offer: object) -> bool:
        for name in PLACEMENT_KEYS:
            want = getattr(self, name)
            if want is not None and getattr(offer, name) != want:
                return False
        return True

    def describe(self) -> str:
        parts = [
            f"{name}={getattr(self, name)}"
            for name in PLACEMENT_KEYS
            if getattr(self, name) is not None
        ]
        return ", ".join(parts) or "everything"


class BucketShape:
    """PlannedBucket's behaviour."""

    if TYPE_CHECKING:
        name: str
        store: str
        action: Action
        region: str | None
        note: str

    @property
    def uri(self) -> str:
        return f"{STORE_SCHEMES.get(self.store, self.store)}://{self.name}"

    @property
    def unread(self) -> bool:
        """Used as it is, but `plan` could not read it (no credentials or no network there;
        `note` says why): nothing is known of it, not even that it exists."""
        return self.action is Action.NOOP and self.region is None and bool(self.note)


class AutostopShape:
    """AutostopSetting's behaviour."""

    if TYPE_CHECKING:
        stop_after: int | None
        down_after: int | None
        wait_for: str
        hook: str | None
        hook_timeout: int

    @property
    def short(self) -> str:
        """SkyPilot's AUTOSTOP cell: `10m`, `10m (down)`; both timers: `10m (down 7d)`."""
        if self.stop_after is None:
            return f"{self.down_after}m (down)"
        if self.down_after is None:
            return f"{self.stop_after}m"
        return f"{self.stop_after}m (down {minutes_text(self.down_after)})"

    @property
    def text(self) -> str:
        """Every part a change can touch, for the plan's attribute line."""
        parts = [self.short]
        if self.wait_for != WAIT_FOR_DEFAULT:
            parts.append(f"wait_for {self.wait_for}")
        if self.hook:
            digest = sha256_hex(self.hook)[:8]
            parts.append(f"hook {digest} ({self.hook_timeout} s)")
        return ", ".join(parts)


class ClusterShape:
    """ClusterSpec's behaviour."""

    if TYPE_CHECKING:
        name: str
        shown_as: str | None
        offer: Any
        num_nodes: int
        autostop: Any

    @property
    def shown_name(self) -> str:
        """The name to show: as typed with -c (`my_cluster`), else the cluster's own."""
        return self.shown_as or self.name

    @property
    def hourly_cost(self) -> float:
        return money(self.offer.hourly_price * self.num_nodes)

    @property
    def autostop_text(self) -> str:
        return self.autostop.text if self.autostop else "off"


class SummaryShape:
    """Summary's behaviour."""

    if TYPE_CHECKING:
        add: int
        change: int
        destroy: int
        buckets_add: int
        buckets_change: int

    @property
    def has_changes(self) -> bool:
        return bool(
            self.add or self.change or self.destroy or self.buckets_add or self.buckets_change
        )

    def buckets_text(self, *, done: bool = False) -> str:
        """`Buckets: 1 to create, 2 to upload again.` (`done`: `1 created, 2 uploaded
        again.`), empty when the plan does no bucket work: counted apart from clusters."""
        words = ("created", "uploaded again") if done else ("to create", "to upload again")
        parts = [
            f"{n} {w}"
            for n, w in zip((self.buckets_add, self.buckets_change), words, strict=True)
            if n
        ]
        return f"Buckets: {', '.join(parts)}." if parts else ""


class PlanShape:
    """Plan's lookups (typed loosely: this leaf cannot import the models it serves)."""

    if TYPE_CHECKING:
        changes: list[Any]
        tasks: list[Any]
        task: Any

    def base_dir(self) -> str | None:
        """Where the plan's relative job paths start, absolute (None: it records none)."""
        base = self.task.relative_to
        if base is None or os.path.isabs(base):  # an absolute base: the previous format
            return base
        # the plan file's directory, absolute (the current one for a plan not saved), set
        # by whoever read or made the plan (Plan.at, planview.read_view)
        folder = getattr(self, "_plan_dir", None)
        if folder is None:
            return None
        return os.path.normpath(os.path.join(folder, base))

    def shown_path(self, recorded: str) -> str:
        """A recorded local path as the reviewer reads it: absolute, from this checkout."""
        base = self.base_dir()
        if base is None or recorded.startswith(("/", "~", "{", "$")) or "://" in recorded:
            return recorded
        return os.path.normpath(os.path.join(base, recorded))

    def change_for(self, cluster: str) -> Any:
        """The ClusterChange of `cluster`, or None."""
        return next((c for c in self.changes if c.cluster == cluster), None)

    def placement_for(self, cluster: str) -> Any:
        """The TaskPlacement of `cluster`, or None."""
        return next((t for t in self.tasks if t.cluster == cluster), None)

    def shown_names(self) -> dict[str, str]:
        """Each cluster the user named otherwise (`-c my_cluster`) by that name, keyed by
        the engine-safe one: what progress lines show."""
        return {
            c.cluster: c.after.shown_as
            for c in self.changes
            if c.after is not None and c.after.shown_as
        }

    @property
    def takeovers(self) -> list[Any]:
        return [c for c in self.changes if c.takes_over is not None]
