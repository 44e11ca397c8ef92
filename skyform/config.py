"""SKYFORM_HOME and its config.yaml (node pools, local node, planning defaults).

SKYFORM_HOME defaults to ~/.skyform; it is created 0700 because it holds state,
keys and known_hosts. The config file is optional: a fresh machine has none.

    # $SKYFORM_HOME/config.yaml
    local:                      # the embedded `local` infra (this machine)
      hourly_price: 0.0
    ssh_pools:                  # SkyPilot's ssh_node_pools.yaml shape, plus labels
      lab:
        user: ubuntu
        identity_file: ~/.ssh/id_ed25519
        hosts:
          - 10.0.0.5
          - {host: 10.0.0.6, port: 2222, labels: {region: west, zone: west-a, spot: true}}
    plan:
      clouds: [aws, gcp]        # clouds considered when a task does not name its infra
    kubernetes:                 # as SkyPilot's config.yaml
      allowed_contexts: [a, b]  # or `all`; default: the kubeconfig's current context
      capacity_ttl: 300         # seconds the discovered nodes are reused by `plan`
      timeout: 5                # seconds per Kubernetes API call
    recovery:                   # managed jobs (skyform jobs launch)
      check_interval: 2         # seconds between probes of a running job's nodes
      lost_after: 2             # failed probes in a row before a node counts as lost
      preempt_cooldown: 600     # seconds a preempted ssh host is not reused
      give_up_after: 86400      # seconds of relaunching without capacity before
                                # FAILED_NO_RESOURCE (null: never give up, as SkyPilot)
      max_rounds: null          # or at most N relaunch rounds (whichever comes first)
    autostop:
      check_interval: 60        # seconds between the node agent's idleness checks
                                # (SkyPilot's 60; lower it for tests)
    storage:                    # buckets in file_mounts, for local and ssh nodes and plan time
      endpoint: http://minio.lab:9000   # an S3-compatible store (MinIO, Ceph); default:
                                        # AWS_ENDPOINT_URL, else AWS itself
      region: us-east-1         # where created S3 buckets go when no cloud placement decides
      access_key_id: AKIA...    # default: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
      secret_access_key: ...    # (never written to a plan, a log or --json)
      r2_endpoint: https://<account>.r2.cloudflarestorage.com
    state:                      # where state lives; default: SKYFORM_HOME/state.db
      url: postgresql://skyform@db.lab:5432/skyform   # team mode (or sqlite:///path);
                                # SKYFORM_STATE_URL overrides it
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator

from skyform.errors import ConfigError, UnsafePathError
from skyform.frozen import Frozen as _Strict
from skyform.infra import PRICED
from skyform.inputfile import read_input_file
from skyform.paths import (  # re-exported: callers find them here; paths is the light home
    DEFAULT_HOME,  # noqa: F401
    ensure_dir,  # noqa: F401
    ensure_home,  # noqa: F401
    home,
)


def confined(root: Path, *names: str) -> Path:
    """`root/names...`, refused unless every name is one plain path component and the result,
    resolved (symlinks followed), lies strictly under `root`. Every path made from a name
    (cluster, node, lock, job, export directory) goes through here before it is created or
    removed, so an edited name like `..` or `../../x` can never reach outside its root."""
    for name in names:
        if (
            not name
            or name in (".", "..")
            or "/" in name
            or "\\" in name
            or "\0" in name
            or name != name.strip()
        ):
            raise UnsafePathError(
                f"refusing the name {name!r}: it is not a plain file name "
                f"(the path would not stay under {root})",
                "Names come from the plan; make a new one with `skyform plan`.",
            )
    base = Path(root).resolve()
    path = base.joinpath(*names)
    resolved = path.resolve()
    if not resolved.is_relative_to(base) or resolved == base:
        raise UnsafePathError(
            f"refusing {path}: it resolves to {resolved}, outside {base}",
            "Remove the symlink, or make a new plan with `skyform plan`.",
        )
    return path


class HostLabels(_Strict):
    """Labels that make a host behave like a cloud offer for the optimizer."""

    region: str | None = None
    zone: str | None = None
    spot: bool = False
    instance_type: str | None = None


class SSHHost(_Strict):
    host: str
    port: int | None = Field(default=None, ge=1, le=65535)
    user: str | None = None
    identity_file: str | None = None
    labels: HostLabels = HostLabels()
    cpus: float | None = Field(default=None, gt=0)
    memory: float | None = Field(default=None, gt=0, description="GiB")
    accelerators: dict[str, float] = {}
    hourly_price: float | None = Field(default=None, ge=0)

    @classmethod
    def parse(cls, raw: Any) -> SSHHost:
        if isinstance(raw, str):
            return cls(host=raw)
        if isinstance(raw, dict) and "ip" in raw and "host" not in raw:
            raw = {("host" if k == "ip" else k): v for k, v in raw.items()}
        return cls.model_validate(raw)


class SSHPool(_Strict):
    user: str | None = None
    identity_file: str | None = None
    port: int = Field(default=22, ge=1, le=65535)
    hourly_price: float = Field(default=0.0, ge=0)
    hosts: list[SSHHost]

    @field_validator("hosts", mode="before")
    @classmethod
    def _hosts(cls, value: Any) -> Any:
        if not isinstance(value, list) or not value:
            raise ValueError("hosts must be a non-empty list")
        return [SSHHost.parse(h) if not isinstance(h, SSHHost) else h for h in value]


class LocalNode(_Strict):
    cpus: float | None = Field(default=None, gt=0)
    memory: float | None = Field(default=None, gt=0)
    accelerators: dict[str, float] = {}
    hourly_price: float = Field(default=0.0, ge=0)


class PlanDefaults(_Strict):
    clouds: list[str] = list(PRICED)


class RecoverySettings(_Strict):
    """Managed jobs: how often the controller probes, when a node counts as lost, how long
    a preempted ssh host is left alone, how long (or how many rounds) relaunching goes on
    without capacity before the job gives up."""

    check_interval: float = Field(default=2.0, gt=0)
    lost_after: int = Field(default=2, ge=1)
    preempt_cooldown: float = Field(default=600.0, ge=0)
    give_up_after: float | None = Field(default=24 * 3600.0, gt=0)
    max_rounds: int | None = Field(default=None, ge=1)


class AutostopSettings(_Strict):
    """How often the node agent checks whether its cluster is idle (SkyPilot: 60 s)."""

    check_interval: int = Field(default=60, ge=1, le=3600)


class KubernetesSettings(_Strict):
    """Which kubeconfig contexts skyform may plan on (SkyPilot's `kubernetes.allowed_contexts`:
    a list, or `all`; unset = the current context), how long `plan` reuses the node capacity it
    discovered, and how long one API call may take."""

    allowed_contexts: list[str] | Literal["all"] | None = None
    capacity_ttl: float = Field(default=300.0, ge=0)
    timeout: float = Field(default=5.0, gt=0)


class StorageSettings(_Strict):
    """Where s3:// (and r2://) buckets are reached from this machine and from local/ssh nodes.
    Unset values fall back to the standard AWS_* variables that boto3, awscli and rclone read."""

    endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: SecretStr | None = None
    r2_endpoint: str | None = None


class ServeSettings(_Strict):
    """How long a service's load balancer waits on a client that sends nothing (seconds;
    nginx's client_header_timeout, keepalive_timeout and client_body_timeout): for its
    request line and headers, between two requests, between two parts of a body."""

    client_header_timeout: float = Field(default=60.0, gt=0)
    client_keepalive_timeout: float = Field(default=75.0, gt=0)
    client_body_timeout: float = Field(default=60.0, gt=0)


class PulumiSettings(_Strict):
    backend_url: str | None = None
    project: str = "skyform"


class StateSettings(_Strict):
    # sqlite:///path (the embedded default: SKYFORM_HOME/state.db) or
    # postgresql://user@host:port/db (team mode); SKYFORM_STATE_URL overrides it
    url: str | None = None


class Config(_Strict):
    local: LocalNode = LocalNode()
    state: StateSettings = StateSettings()
    ssh_pools: dict[str, SSHPool] = {}
    plan: PlanDefaults = PlanDefaults()
    pulumi: PulumiSettings = PulumiSettings()
    kubernetes: KubernetesSettings = KubernetesSettings()
    recovery: RecoverySettings = RecoverySettings()
    autostop: AutostopSettings = AutostopSettings()
    storage: StorageSettings = StorageSettings()
    serve: ServeSettings = ServeSettings()


def config_path() -> Path:
    return home() / "config.yaml"


MAX_CONFIG_BYTES = 4 * 1024 * 1024  # pools of thousands of hosts fit many times over


def config_exists(path: Path | None = None) -> bool:
    """Whether there is a config.yaml to read: anything at the path counts (a link loop, a
    link to nothing, a FIFO), so reading it says what is wrong instead of silently
    planning without its pools and storage settings."""
    return os.path.lexists(path or config_path())


def load_config(path: Path | None = None) -> Config:
    """Read config.yaml; a missing file (nothing at all at its path) is an empty config.
    It is read as task files are (skyform/inputfile.py): a regular file, at most
    MAX_CONFIG_BYTES, a FIFO with no writer an error after a while, not a hang."""
    import yaml

    path = path or config_path()
    if not config_exists(path):
        return Config()

    def error(message: str, hint: str | None) -> ConfigError:
        return ConfigError(
            f"{path}: {message}",
            "skyform reads config.yaml as a regular YAML file you can read: make it one, "
            "or remove it to run without a config.",
        )

    data = read_input_file(path, MAX_CONFIG_BYTES, what="config.yaml", error=error)
    try:
        raw = yaml.safe_load(data.decode("utf-8-sig")) or {}
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (bad byte at offset {exc.start})", "Save it as UTF-8."
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    try:
        return Config.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"{path}: {where}: {first['msg']}",
            hint="See the config.yaml example in skyform/config.py's docstring or the README.",
        ) from None
