"""The plan artifact: what `skyform plan` writes and `skyform apply` executes.

Everything here is a frozen pydantic model that round-trips through JSON. A plan holds
no timestamps and nothing host-specific, so the same inputs give the same bytes; the
file format is versioned by FORMAT_VERSION and planfile.py refuses other versions.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import PrivateAttr, model_serializer

from skyform.frozen import Frozen as _Model
from skyform.plan.cluster_model import (  # noqa: F401 - re-exported: the plan's parts
    AutostopSetting,
    BlockedPlacement,
    BucketMount,
    ClusterSpec,
    JobSpec,
    Money,
    OutsideOf,
    PlacedOffer,
    PlannedBucket,
    PlannedMount,
    WorkdirFiles,
)
from skyform.plan.parts import (  # noqa: F401 - re-exported: the values of the models
    ACTION_SYMBOLS,
    HOOK_TIMEOUT_DEFAULT,
    PRICE_DIGITS,
    STORE_SCHEMES,
    WAIT_FOR_DEFAULT,
    Action,
    PlanShape,
    SummaryShape,
    member_host,
    minutes_text,
    money,
)

FORMAT_VERSION = 2  # 2: a content digest, secrets by name only

Objective = Literal["cost", "time"]


class AttributeChange(_Model):
    path: str
    before: str | None
    after: str | None
    forces_replacement: bool = False


class ClusterChange(_Model):
    """One cluster's action. `reason` and `attributes` are for people; apply reads `action`,
    the specs (`before`, `after`) and `workdir_changed` (plan/effects.py says how)."""

    cluster: str
    action: Action
    reason: str
    before: ClusterSpec | None = None
    after: ClusterSpec | None = None
    attributes: list[AttributeChange] = []
    # Whose cluster this plan acts on when it is not this task file's: "the task file
    # /abs/other.yaml", "managed job 3". `apply` needs --take-over (or an interactive yes).
    takes_over: str | None = None
    # The files the workdir sync sends differ from the last job's: the job runs again (the
    # one thing the specs cannot say; workdir contents are never in a plan)
    workdir_changed: bool = False
    # Bucket mounts of the job (its file_mounts keys) that apply attaches again on the nodes
    # of a cluster that stays: a COPY whose bucket is uploaded again is copied anew, a
    # MOUNT or MOUNT_CACHED found missing on a node is mounted again (an update)
    attach_again: list[str] = []

    @model_serializer(mode="wrap")
    def _without_unchanged_workdir(self, handler):
        data = handler(self)
        if not data.get("workdir_changed"):  # plans whose workdir is as synced keep their bytes
            data.pop("workdir_changed", None)
        if not data.get("attach_again"):  # and plans with nothing to attach again too
            data.pop("attach_again", None)
        return data


class UntouchedCluster(_Model):
    """A cluster this plan leaves alone although it is related: made from the same task file
    (under another name, or a task since removed), or named by the task but someone else's."""

    cluster: str
    reason: str


class Alternative(_Model):
    """A row of the "considered resources" table."""

    offer: PlacedOffer
    hourly_cost: Money
    estimated_cost: Money
    estimated_hours: Money
    chosen: bool = False
    egress_cost: Money = 0.0  # moving the task's anchored inputs (`inputs`) to this offer


class TaskPlacement(_Model):
    """The optimizer's choice for one task of the DAG."""

    task: str
    index: int
    cluster: str
    cluster_name_from: str | None = None  # 'the task name "train_v2"' when it was changed
    num_nodes: int
    depends_on: list[str] = []
    request: str  # what the user asked, in task-YAML words, e.g. "A100:8, spot"
    offer: PlacedOffer
    hourly_cost: Money
    estimated_hours: Money
    estimated_cost: Money
    start_hours: Money = 0.0
    finish_hours: Money = 0.0
    alternatives: list[Alternative] = []
    job: JobSpec


class EgressFlow(_Model):
    src_task: str
    dst_task: str
    gigabytes: Money
    src_infra: str
    dst_infra: str
    cost: Money
    seconds: Money
    # The source's region is unknown (a bucket without `skyform.inputs_location`): priced
    # at the dearest rate the source cloud lists, so the cost is at most this.
    upper_bound: bool = False


class HostProbe(_Model):
    """What `skyform check` measured on an ssh host whose declared config left a gap, as this
    plan used it (a new probe with other values makes the plan stale)."""

    host: str  # ssh/<pool>/<host>:<port>
    cpus: float | None = None
    memory_gib: float | None = None
    accelerators: str | None = None  # e.g. "A100:2"
    arch: str | None = None
    probed_at: str = ""


class TaskSource(_Model):
    """Where the plan came from. `path` is relative to the plan file's directory."""

    path: str
    name: str | None = None
    file_digest: str  # sha256 of the task file's bytes
    digest: str  # sha256 of the normalized task (secrets hashed), env overrides included
    execution: str = "serial"
    # resource flags given on the command line (`{"gpus": "A100:1"}`), part of what was asked
    overrides: dict[str, str] = {}
    # the directory the task's relative paths were made absolute from (where `plan` ran, as
    # `sky launch` resolves them); apply reads the task file again from there
    relative_to: str | None = None

    @model_serializer(mode="wrap")
    def _without_empty_overrides(self, handler):
        data = handler(self)
        if not data.get("overrides"):  # plans made without flags keep their bytes
            data.pop("overrides", None)
        if data.get("relative_to") is None:  # nor do tasks without relative paths
            data.pop("relative_to", None)
        return data


class Prior(_Model):
    """The state the plan was made against; apply refuses the plan when it moved on."""

    lineage: str | None = None
    serial: int = 0


class KubernetesContext(_Model):
    """A Kubernetes context the plan could use, as discovered when the plan was made."""

    name: str
    digest: str  # of its node types ("unreachable" hashed when it could not be read)
    nodes: str  # what it had, in words (for the stale-plan message)
    usable: bool = True  # False: it could not be read (the reason is in `nodes`)


class KubernetesProvenance(_Model):
    """What the plan's Kubernetes placements (or their absence) rest on. apply re-reads the
    contexts in `scope` and refuses the plan when `digest` no longer matches."""

    scope: list[str]  # `kubernetes` (every planned context) or `kubernetes/<context>`
    digest: str  # over `contexts`' digests
    contexts: list[KubernetesContext] = []
    not_considered: list[str] = []  # why Kubernetes, a context, or a pod size was left out


class Summary(SummaryShape, _Model):
    add: int
    change: int
    destroy: int
    hourly_before: Money
    hourly_after: Money
    estimated_cost: Money
    estimated_hours: Money
    egress_cost: Money = 0.0
    # buckets, counted apart from clusters: made by apply, and uploaded again
    buckets_add: int = 0
    buckets_change: int = 0

    @model_serializer(mode="wrap")
    def _without_no_buckets(self, handler):
        data = handler(self)
        for name in ("buckets_add", "buckets_change"):
            if not data.get(name):  # plans without bucket work keep their bytes
                data.pop(name, None)
        return data


class Plan(PlanShape, _Model):
    _plan_dir: str | None = PrivateAttr(default=None)  # see PlanShape: never serialized
    format_version: int = FORMAT_VERSION
    skyform_version: str
    objective: Objective
    destroy: bool = False
    task: TaskSource
    catalog_digest: str
    onprem_digest: str  # of the on-prem sources in onprem_scope only
    onprem_scope: list[str] = []  # `local`, `ssh/<pool>`, `ssh`: what the tasks can run on
    kubernetes: KubernetesProvenance | None = None  # None: no task can run on Kubernetes
    prior: Prior
    blocked: list[BlockedPlacement] = []
    allowed: list[BlockedPlacement] = []  # when set, only offers matching one of these
    tasks: list[TaskPlacement] = []
    egress: list[EgressFlow] = []
    changes: list[ClusterChange] = []
    untouched: list[UntouchedCluster] = []
    host_probes: list[HostProbe] = []
    buckets: list[PlannedBucket] = []
    summary: Summary

    if TYPE_CHECKING:  # PlanShape's lookups (plan/parts.py), as typed for the models

        def change_for(self, cluster: str) -> ClusterChange | None: ...

        def placement_for(self, cluster: str) -> TaskPlacement | None: ...

        @property
        def takeovers(self) -> list[ClusterChange]: ...

    def __eq__(self, other: object) -> bool:
        """The same plan wherever it was read from: its location is no part of it."""
        return type(other) is type(self) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # lists inside: never hashable anyway

    def at(self, folder: str | Path) -> Plan:
        """This plan as read from (or saved in) `folder`: where its recorded base starts."""
        located = self.model_copy()
        located._plan_dir = os.path.abspath(folder)
        return located

    @model_serializer(mode="wrap")
    def _without_no_buckets(self, handler):
        data = handler(self)
        if not data.get("buckets"):  # plans without buckets keep their bytes
            data.pop("buckets", None)
        return data
