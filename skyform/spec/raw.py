"""The SkyPilot task schema as written in YAML: shapes, types and allowed keys only.

These models accept exactly the keys SkyPilot accepts (plus skyform's `skyform:`) and
reject the rest (`extra="forbid"`), strictly typed like SkyPilot's JSON schema. Fields
whose YAML form is a union (accelerators, ports, autostop ...) stay `Any` here and are
parsed by the modules that normalize them, so their errors can be precise.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MAX_RESTARTS = 10_000


def _compat(**kw: Any) -> Any:
    """A key SkyPilot accepts that skyform reads but does not act on (not listed in hints)."""
    return Field(default=None, json_schema_extra={"listed": False}, **kw)


class _Raw(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", strict=True, populate_by_name=False)


class RawWorkdirGit(_Raw):
    url: str
    ref: str | None = None


class RawResources(_Raw):
    """One resources mapping (also each entry of `any_of` / `ordered`)."""

    infra: str | None = None
    cloud: str | None = None
    region: str | None = None
    zone: str | None = None
    cpus: Any = None
    memory: Any = None
    accelerators: Any = None
    gpus: Any = _compat()  # alias of accelerators
    accelerator_args: dict[str, Any] | None = _compat()
    instance_type: str | None = None
    use_spot: bool | None = None
    job_recovery: Any = None
    spot_recovery: Any = _compat()  # legacy name of job_recovery
    disk_size: Any = None
    disk_tier: str | None = None
    network_tier: str | None = None
    ports: Any = None
    image_id: Any = None
    labels: dict[str, str] | None = None
    autostop: Any = None
    max_hourly_cost: float | None = None
    # Accepted for compatibility, not acted on (a warning says so).
    volumes: list[Any] | None = _compat()
    ephemeral_storage: Any = _compat()
    local_disk: str | None = _compat()
    priority: int | None = _compat(ge=-1000, le=1000)
    priority_class: str | None = _compat()


class RawTopResources(RawResources):
    any_of: list[dict[str, Any]] | None = None
    ordered: list[dict[str, Any]] | None = None


class RawJobRecovery(_Raw):
    strategy: str | None = None
    max_restarts_on_errors: int | None = Field(default=None, ge=0, le=MAX_RESTARTS)
    recover_on_exit_codes: Any = None


class RawAutostop(_Raw):
    idle_minutes: int | None = Field(default=None, ge=0)
    down: bool | None = None
    wait_for: str | None = None
    hook: str | None = None
    hook_timeout: int | None = Field(default=None, ge=1)


class RawStorage(_Raw):
    """The dict form of a file mount (a bucket, or a local dir uploaded to one)."""

    name: str | None = None
    source: str | list[str] | None = None
    store: str | None = None
    persistent: bool | None = None
    mode: str | None = None
    mount_options: str | None = None
    type: str | None = None
    config: dict[str, Any] | None = None


class RawSkyform(_Raw):
    """skyform's own per-task extension, under the top-level `skyform:` key."""

    estimated_hours: Any = None
    depends_on: list[str] | None = None
    inputs_location: str | None = None
    checkpoint_dir: str | None = None
    arch: str | None = None
    stop_after: Any = None
    down_after: Any = None


class RawTask(_Raw):
    name: str | None = None
    workdir: Any = None
    num_nodes: int | None = None
    resources: dict[str, Any] | None = None
    envs: dict[str, Any] | None = None
    secrets: Any = None
    file_mounts: dict[str, Any] | None = None
    setup: str | None = None
    run: str | None = None
    config: dict[str, Any] | None = None
    service: dict[str, Any] | None = None
    pool: dict[str, Any] | None = None
    volumes: dict[str, Any] | None = None
    inputs: dict[str, float] | None = None
    outputs: dict[str, float] | None = None
    skyform: dict[str, Any] | None = None
    # Accepted for compatibility, not acted on (a warning says so).
    event_callback: str | None = _compat()
    volume_mounts: list[Any] | None = _compat()
    file_mounts_mapping: dict[str, Any] | None = _compat()
    api_server_access: bool | None = _compat()
    managed_secrets: list[Any] | None = _compat()


IGNORED_TASK_KEYS = (
    "event_callback",
    "volume_mounts",
    "file_mounts_mapping",
    "api_server_access",
)
IGNORED_RESOURCE_KEYS = (
    "accelerator_args",
    "volumes",
    "ephemeral_storage",
    "local_disk",
    "priority",
    "priority_class",
)
