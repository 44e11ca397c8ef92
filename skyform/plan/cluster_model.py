"""The cluster and job parts of a plan: where a cluster runs (`PlacedOffer`), what runs
on it (`JobSpec`, its buckets and mounts, autostop) and its desired shape (`ClusterSpec`).

plan/model.py (the plan envelope: changes, placements, provenance) builds on these and
re-exports them; import them from there.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, model_serializer

from skyform.frozen import Frozen as _Model
from skyform.plan.parts import (
    HOOK_TIMEOUT_DEFAULT,
    WAIT_FOR_DEFAULT,
    Action,
    AutostopShape,
    BucketShape,
    ClusterShape,
    OfferShape,
    PlacementShape,
    money,
)

Money = Annotated[float, AfterValidator(money)]  # dollars, hours, GB, seconds alike


class PlacedOffer(OfferShape, _Model):
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


class BlockedPlacement(PlacementShape, _Model):
    """A placement the optimizer must not choose; None in any field is a wildcard."""

    cloud: str | None = None
    context: str | None = None
    region: str | None = None
    zone: str | None = None
    instance_type: str | None = None
    spot: bool | None = None
    reason: str = ""


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


class PlannedBucket(BucketShape, _Model):
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


class AutostopSetting(AutostopShape, _Model):
    """When the node agent stops and/or tears down an idle cluster (minutes since its last
    activity; None: never). `wait_for` says what activity is: jobs_and_ssh, jobs or none."""

    stop_after: int | None = None
    down_after: int | None = None
    wait_for: str = WAIT_FOR_DEFAULT
    hook: str | None = None
    hook_timeout: int = HOOK_TIMEOUT_DEFAULT


class ClusterSpec(ClusterShape, _Model):
    """The desired (or recorded) shape of one cluster: the offer and what it runs."""

    name: str  # what the engines, state, locks and paths use (plan/naming.py)
    # the name as the user typed it with -c (`my_cluster`), when it is not `name`: shown
    shown_as: str | None = None
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
        for optional in ("autostop", "shown_as"):  # plans made without them keep their bytes
            if data.get(optional) is None:
                data.pop(optional, None)
        return data


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
