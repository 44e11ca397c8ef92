"""The plan artifact: what `skyform plan` writes and `skyform apply` executes.

Everything here is a frozen pydantic model that round-trips through JSON. A plan holds
no timestamps and nothing host-specific, so the same inputs give the same bytes; the
file format is versioned by FORMAT_VERSION and planfile.py refuses other versions.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_serializer

from skyform.digests import sha256_hex
from skyform.frozen import Frozen as _Model

FORMAT_VERSION = 2  # 2: a content digest, secrets by name only
PRICE_DIGITS = 6  # every money and hour figure is rounded so float noise never reaches a file

Objective = Literal["cost", "time"]


def money(value: float) -> float:
    return round(float(value), PRICE_DIGITS) + 0.0  # + 0.0 turns -0.0 into 0.0


Money = Annotated[float, AfterValidator(money)]  # dollars, hours, GB, seconds alike


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


class PlacedOffer(_Model):
    """A catalog Offer as recorded in a plan (same fields as skyform.plan.catalog.Offer)."""

    cloud: str
    region: str
    zone: str | None
    instance_type: str
    spot: bool
    hourly_price: Money
    accelerator: str | None = None
    accelerator_count: float = 0.0
    vcpus: float | None = None
    memory_gib: float | None = None
    arch: str = "x86_64"
    gpu_memory_gib: float | None = None
    context: str | None = None
    capacity: int | None = None

    @property
    def infra(self) -> str:
        """As task YAML writes infra: `aws/us-east-1/use1-az4`, `ssh/lab/west/west-a`,
        `kubernetes/my-context`, `local`."""
        if self.cloud == "local":
            return "local"
        parts = [self.cloud]
        if self.cloud == "ssh" and self.context:
            parts.append(self.context)
        parts.append(self.region)
        if self.zone and self.zone != self.region:
            parts.append(self.zone)
        return "/".join(parts)

    @property
    def accelerators(self) -> dict[str, float]:
        return {self.accelerator: self.accelerator_count} if self.accelerator else {}


class BlockedPlacement(_Model):
    """A placement the optimizer must not choose; None in any field is a wildcard."""

    cloud: str | None = None
    context: str | None = None
    region: str | None = None
    zone: str | None = None
    instance_type: str | None = None
    spot: bool | None = None
    reason: str = ""

    def matches(self, offer: PlacedOffer | object) -> bool:
        for name in ("cloud", "context", "region", "zone", "instance_type", "spot"):
            want = getattr(self, name)
            if want is not None and getattr(offer, name) != want:
                return False
        return True

    def describe(self) -> str:
        parts = [
            f"{name}={getattr(self, name)}"
            for name in ("cloud", "context", "region", "zone", "instance_type", "spot")
            if getattr(self, name) is not None
        ]
        return ", ".join(parts) or "everything"


class OutsideOf(_Model):
    """Blocks every offer that matches none of `allowed`: "only here" as a block, so the
    optimizer needs one kind of filter (recovery's FAILOVER retries the launched region)."""

    allowed: list[BlockedPlacement]

    def matches(self, offer: object) -> bool:
        return not any(a.matches(offer) for a in self.allowed)


class BucketMount(_Model):
    """How a job uses a bucket: COPY it (its `prefix`) before setup, or MOUNT it over FUSE."""

    bucket: str
    store: str  # s3 | gcs | r2
    prefix: str = ""
    mode: str = "MOUNT"  # COPY | MOUNT | MOUNT_CACHED
    read_only: bool = False
    rclone_flags: list[str] = []


class PlannedMount(_Model):
    """`dst: src` where src is a local path (relative to the task file) or a bucket URI;
    `bucket` is set when the mount is a bucket (then `source` is for display)."""

    source: str
    mode: str | None = None
    bucket: BucketMount | None = None

    @model_serializer(mode="wrap")
    def _without_no_bucket(self, handler):
        data = handler(self)
        if data.get("bucket") is None:  # plans and digests of local mounts keep their bytes
            data.pop("bucket", None)
        return data


class PlannedBucket(_Model):
    """A bucket the plan uses: one skyform creates (`action` create, a resource of the plan)
    or one that exists, read at plan time (`action` noop): apply refuses the plan when a
    bucket that existed is gone, or when one it would create appeared meanwhile."""

    name: str
    store: str  # s3 | gcs | r2
    region: str | None = None  # None: could not be read (`note` says why)
    action: Action = Action.NOOP
    persistent: bool = True
    created_by_skyform: bool = False  # skyform deletes only these
    uploads: list[str] = []  # local sources uploaded into it, relative to the task file
    used_by: list[str] = []  # clusters that mount or copy it
    size_gb: Money | None = None  # of the prefix the plan reads, when cheap to know
    note: str = ""
    # of the local sources as they are now (the files an upload sends, by content): `update`
    # when it differs from the last upload's; apply refuses the plan once they change
    source_digest: str | None = None

    @model_serializer(mode="wrap")
    def _without_no_sources(self, handler):
        data = handler(self)
        if data.get("source_digest") is None:  # plans of buckets without uploads keep their bytes
            data.pop("source_digest", None)
        return data

    @property
    def uri(self) -> str:
        return f"{STORE_SCHEMES.get(self.store, self.store)}://{self.name}"


STORE_SCHEMES = {"s3": "s3", "gcs": "gs", "r2": "r2"}


class JobSpec(_Model):
    """What runs on a cluster: everything needed to sync, set up and run, minus secret values.

    Secrets are recorded by name only (no digest of a value: a shared plan must reveal
    nothing testable about it); apply takes their values from the task file, `--secret` or
    the environment.
    """

    name: str
    workdir: str | None = None
    setup: str | None = None
    run: str | None = None
    envs: dict[str, str] = {}
    secrets: list[str] = []  # names, sorted
    file_mounts: dict[str, PlannedMount] = {}
    num_nodes: int = 1
    checkpoint_dir: str | None = None
    setup_digest: str = ""  # jobdigest.with_digests fills both in
    job_digest: str = ""


WAIT_FOR_DEFAULT = "jobs_and_ssh"
HOOK_TIMEOUT_DEFAULT = 3600


def minutes_text(minutes: int) -> str:
    """`90` -> `90m`, `120` -> `2h`, `10080` -> `7d`: the largest unit that divides it."""
    for unit, size in (("d", 1440), ("h", 60)):
        if minutes >= size and minutes % size == 0:
            return f"{minutes // size}{unit}"
    return f"{minutes}m"


class AutostopSetting(_Model):
    """When the node agent stops and/or tears down an idle cluster (minutes since its last
    activity; None: never). `wait_for` says what activity is: jobs_and_ssh, jobs or none."""

    stop_after: int | None = None
    down_after: int | None = None
    wait_for: str = WAIT_FOR_DEFAULT
    hook: str | None = None
    hook_timeout: int = HOOK_TIMEOUT_DEFAULT

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


class ClusterSpec(_Model):
    """The desired (or recorded) shape of one cluster: the offer and what it runs."""

    name: str
    offer: PlacedOffer
    num_nodes: int = Field(ge=1)
    disk_size: int = 256
    disk_tier: str | None = None
    network_tier: str | None = None
    ports: list[str] = []
    image_id: str | None = None
    labels: dict[str, str] = {}
    setup_digest: str | None = None
    job_digest: str | None = None
    autostop: AutostopSetting | None = None

    @model_serializer(mode="wrap")
    def _without_autostop(self, handler):
        data = handler(self)
        if data.get("autostop") is None:  # plans made without autostop keep their bytes
            data.pop("autostop", None)
        return data

    @property
    def hourly_cost(self) -> float:
        return money(self.offer.hourly_price * self.num_nodes)

    @property
    def autostop_text(self) -> str:
        return self.autostop.text if self.autostop else "off"


class WorkdirFiles(_Model):
    """What a workdir sync sends (the files `.skyignore`/`.gitignore` leave in), by content:
    relative path -> the first 16 hex digits of its sha256 (a symlink: of its target).
    Recorded in state when a job is started, compared at plan time; never in a plan file."""

    files: dict[str, str] = {}

    def compare(self, now: WorkdirFiles) -> tuple[list[str], list[str], list[str]]:
        """(changed, added, removed) paths from self to `now`, sorted."""
        changed = sorted(p for p, d in now.files.items() if p in self.files and self.files[p] != d)
        added = sorted(p for p in now.files if p not in self.files)
        removed = sorted(p for p in self.files if p not in now.files)
        return changed, added, removed


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

    @model_serializer(mode="wrap")
    def _without_unchanged_workdir(self, handler):
        data = handler(self)
        if not data.get("workdir_changed"):  # plans whose workdir is as synced keep their bytes
            data.pop("workdir_changed", None)
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

    @model_serializer(mode="wrap")
    def _without_empty_overrides(self, handler):
        data = handler(self)
        if not data.get("overrides"):  # plans made without flags keep their bytes
            data.pop("overrides", None)
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


class Summary(_Model):
    add: int
    change: int
    destroy: int
    hourly_before: Money
    hourly_after: Money
    estimated_cost: Money
    estimated_hours: Money
    egress_cost: Money = 0.0

    @property
    def has_changes(self) -> bool:
        return bool(self.add or self.change or self.destroy)


class Plan(_Model):
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

    @model_serializer(mode="wrap")
    def _without_no_buckets(self, handler):
        data = handler(self)
        if not data.get("buckets"):  # plans without buckets keep their bytes
            data.pop("buckets", None)
        return data

    def change_for(self, cluster: str) -> ClusterChange | None:
        return next((c for c in self.changes if c.cluster == cluster), None)

    def placement_for(self, cluster: str) -> TaskPlacement | None:
        return next((t for t in self.tasks if t.cluster == cluster), None)

    @property
    def takeovers(self) -> list[ClusterChange]:
        return [c for c in self.changes if c.takes_over is not None]
