"""The normalized task: what the planner, the engines and the renderers consume.

Everything here is a frozen pydantic model built by the loader from validated YAML; none
of it is user input any more, so these models carry the meaning, not the syntax:
`V100:8` is `accelerator="V100", accelerator_count=8`, `cpus: 4+` is `Range(4, at_least)`.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import SecretStr, field_serializer

from skyform.frozen import Frozen as _Frozen
from skyform.infra import CONTEXT_SCOPED
from skyform.spec.service_models import ServiceSpec

DEFAULT_DISK_SIZE_GB = 256
REDACTED = "<redacted>"

Execution = Literal["serial", "parallel"]


class Range(_Frozen):
    """`N` (exactly N) or `N+` (at least N). Memory is in GiB."""

    value: float
    at_least: bool = False

    def admits(self, amount: float) -> bool:
        if self.at_least:
            return amount >= self.value - 1e-9
        return abs(amount - self.value) <= 1e-9

    def __str__(self) -> str:
        return f"{self.value:g}{'+' if self.at_least else ''}"


class JobRecovery(_Frozen):
    """`strategy` None means the default (EAGER_NEXT_REGION)."""

    strategy: str | None = None
    max_restarts_on_errors: int = 0
    recover_on_exit_codes: tuple[int, ...] = ()


class Autostop(_Frozen):
    enabled: bool = True
    idle_minutes: int = 5
    down: bool = False
    wait_for: str | None = None
    hook: str | None = None
    hook_timeout: int | None = None


class ResourceRequest(_Frozen):
    """One concrete alternative of what a task asked for. None is a wildcard.

    `context` is the Kubernetes context or the ssh node-pool name. `accelerator` keeps the
    name as written, upper-cased (TPU names lower-case); the catalog canonicalizes it.
    `image_id` is a string, or {region: image} which also restricts the regions.
    """

    cloud: str | None = None
    region: str | None = None
    zone: str | None = None
    context: str | None = None
    accelerator: str | None = None
    accelerator_count: float | None = None
    cpus: Range | None = None
    memory: Range | None = None
    instance_type: str | None = None
    use_spot: bool = False
    disk_size: int = DEFAULT_DISK_SIZE_GB
    disk_tier: str | None = None
    network_tier: str | None = None
    ports: tuple[str, ...] = ()
    image_id: str | dict[str, str] | None = None
    labels: dict[str, str] = {}
    max_hourly_cost: float | None = None
    job_recovery: JobRecovery | None = None
    autostop: Autostop | None = None

    def __hash__(self) -> int:  # dict fields are not hashable; hash the canonical form
        return hash(self.canonical_json())

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    @property
    def infra(self) -> str:
        """`aws/us-east-1`, `k8s/my-context`, `*` ... as a user would write it."""
        cloud = self.cloud or "*"
        if cloud in CONTEXT_SCOPED:
            return f"{cloud}/{self.context}" if self.context else cloud
        parts = [cloud, self.region or "*", self.zone or "*"]
        while len(parts) > 1 and parts[-1] == "*":
            parts.pop()
        return "/".join(parts)


class ResourceChoices(_Frozen):
    """Ordered groups of alternatives: the planner takes the first group with any feasible
    candidate, and the best candidate within that group."""

    groups: tuple[tuple[ResourceRequest, ...], ...]

    def alternatives(self) -> list[ResourceRequest]:
        return [r for group in self.groups for r in group]


class GitWorkdir(_Frozen):
    url: str
    ref: str | None = None


class BucketSpec(_Frozen):
    """A bucket a file mount uses (SkyPilot's Storage), after SkyPilot's rules were checked.

    `must_exist`: the source was a bucket URI, so skyform reads it and never creates or
    deletes it. Otherwise skyform creates the bucket when it is missing (and uploads
    `uploads`, local paths relative to the task file). `store` None: the placement's cloud
    decides. `prefix` is the sub-path inside the bucket that is copied or mounted.
    """

    name: str
    store: str | None = None
    prefix: str = ""
    mode: Literal["COPY", "MOUNT", "MOUNT_CACHED"] = "MOUNT"
    persistent: bool = True
    must_exist: bool = False
    uploads: tuple[str, ...] = ()
    read_only: bool = False
    rclone_flags: tuple[str, ...] = ()  # MOUNT_CACHED tuning from `type:` / `config:`


class FileMount(_Frozen):
    """A file mount's source: a local path, a bucket URI, or a storage spec (name/store/mode).
    `bucket` is set for every form that involves a bucket."""

    source: str | tuple[str, ...] | None = None
    name: str | None = None
    store: str | None = None
    mode: str | None = None
    persistent: bool | None = None
    options: dict[str, Any] = {}
    bucket: BucketSpec | None = None


def is_uri(value: str) -> bool:
    return "://" in value


class SkyformExt(_Frozen):
    """The `skyform:` key. `estimated_hours` is a number or {accelerator|default: hours}."""

    estimated_hours: float | dict[str, float] | None = None
    depends_on: tuple[str, ...] = ()
    inputs_location: str | None = None
    checkpoint_dir: str | None = None  # exported as SKYFORM_CHECKPOINT_DIR; survives recoveries
    # CPU architecture on aws/gcp: None = x86_64 unless the instance type or image says arm64;
    # "arm64", "x86_64", or "any" (the cheapest of both)
    arch: str | None = None
    # separate idle timers (SkyPilot has one, #9286): stop after N idle minutes, tear down
    # after M (counted from the same last activity, so a stopped cluster goes at M too)
    stop_after: int | None = None
    down_after: int | None = None


class SourceRef(_Frozen):
    """Where the task came from (display only; not part of the task digest)."""

    path: str
    line: int
    resources_line: int | None = None
    resources_column: int | None = None
    # an unnamed task alone in its file is called after the file, as SkyPilot names it
    file_name: str | None = None


class TaskSpec(_Frozen):
    name: str | None = None
    workdir: str | GitWorkdir | None = None
    num_nodes: int = 1
    resources: ResourceChoices
    envs: dict[str, str] = {}
    # None: declared without a value, which only `plan` allows (a plan records names only)
    secrets: dict[str, SecretStr | None] = {}
    file_mounts: dict[str, FileMount] = {}
    setup: str | None = None
    run: str | None = None
    inputs: dict[str, float] = {}
    outputs: dict[str, float] = {}
    config: dict[str, Any] | None = None
    service: ServiceSpec | None = None
    pool: dict[str, Any] | None = None
    volumes: dict[str, Any] | None = None
    skyform: SkyformExt = SkyformExt()
    source: SourceRef

    @field_serializer("secrets")
    def _redact(self, secrets: dict[str, SecretStr | None]) -> dict[str, str]:
        return dict.fromkeys(secrets, REDACTED)

    def label(self, index: int) -> str:
        return self.name or self.source.file_name or f"task #{index + 1}"

    def called(self, index: int) -> str:
        """The task as a message names it: by its name, else its file's (as SkyPilot names
        an unnamed task), `task #N` only for one with neither (a pipeline's, stdin)."""
        named = self.name or self.source.file_name
        return f"task '{named}'" if named else f"task #{index + 1}"

    def secret_values(self) -> dict[str, str]:
        """Plain secret values, for the executor only; never log or serialize them."""
        return {k: v.get_secret_value() for k, v in self.secrets.items() if v is not None}

    def secret_names(self) -> list[str]:
        """Every secret the task declares, with a value or not (what a plan records)."""
        return sorted(self.secrets)
