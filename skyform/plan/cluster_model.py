"""The cluster and job parts of a plan: where a cluster runs (`PlacedOffer`), what runs
on it (`JobSpec`, its buckets and mounts, autostop) and its desired shape (`ClusterSpec`).

plan/model.py (the plan envelope: changes, placements, provenance) builds on these and
re-exports them; import them from there.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated

from pydantic import AfterValidator, Field, model_serializer

from skyform.digests import sha256_hex
from skyform.frozen import Frozen as _Model
from skyform.infra import infra_path

PRICE_DIGITS = 6  # every money and hour figure is rounded so float noise never reaches a file


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
        return infra_path(self.cloud, self.region, self.zone, self.context)

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
