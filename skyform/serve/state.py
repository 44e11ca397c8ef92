"""A service's records: `$SKYFORM_HOME/serve/<name>/` (0700) holds service.json (written by
its controller, temp + rename, 0600), the load balancer's files, logs, and each replica's
task file and plan. Records are read leniently (unknown keys ignored, a missing or torn
file is "no record"), like state records across skyform versions.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from skyform.config import ensure_dir, home
from skyform.errors import SkyformError
from skyform.paths import write_atomic

CONTROLLER_INIT = "CONTROLLER_INIT"
REPLICA_INIT = "REPLICA_INIT"
READY = "READY"
NO_REPLICA = "NO_REPLICA"
FAILED = "FAILED"
SHUTTING_DOWN = "SHUTTING_DOWN"
FAILED_CLEANUP = "FAILED_CLEANUP"
CONTROLLER_FAILED = "CONTROLLER_FAILED"


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ReplicaRecord(_Lenient):
    replica_id: int
    version: int = 1
    cluster: str
    status: str
    endpoint: str | None = None
    infra: str | None = None
    sandbox: int | None = None
    launched_at: float | None = None
    is_spot: bool = False
    role: str = "on-demand"  # spot · on-demand · on-demand fallback
    reason: str = ""
    exit_code: int | None = None  # of the user's process, once it ended
    last_lines: list[str] = []  # the end of its log, kept when it failed
    log_kept: bool = False  # replica-ID.log in the service's folder (serve logs reads it)


class ServiceRecord(_Lenient):
    name: str
    task_path: str
    version: int = 1
    status: str = CONTROLLER_INIT
    controller_pid: int | None = None
    # the load balancer's endpoint: it outlives its controller (lb_process.py)
    lb_host: str | None = None
    lb_pid: int | None = None
    lb_port: int | None = None
    control_port: int | None = None
    endpoint: str | None = None
    created_at: float = 0.0
    ready_since: float | None = None
    autoscaling: str = ""
    load_balancing_policy: str = "least_load"
    replicas: list[ReplicaRecord] = []
    reason: str = ""
    update_mode: str = "rolling"
    active_versions: list[int] = []  # the versions the load balancer routes to
    rolled_back: list[int] = []  # versions that never became READY and were undone


def root() -> Path:
    return home() / "serve"


def service_dir(name: str) -> Path:
    return root() / name


def record_path(name: str) -> Path:
    return service_dir(name) / "service.json"


def lock_path(name: str) -> Path:
    return service_dir(name) / "controller.lock"


def make_dir(name: str) -> Path:
    ensure_dir(root())
    return ensure_dir(service_dir(name))


def read_record(name: str) -> ServiceRecord | None:
    try:
        data = record_path(name).read_bytes()
        return ServiceRecord.model_validate(json.loads(data))
    except (OSError, ValueError, ValidationError):
        return None


def write_record(record: ServiceRecord) -> None:
    write_atomic(record_path(record.name), record.model_dump_json(indent=1), mode=0o600)


def list_services() -> list[str]:
    if not root().is_dir():
        return []
    return sorted(p.name for p in root().iterdir() if (p / "service.json").exists())


def controller_alive(name: str) -> bool:
    """A live controller holds the service's lease `service/<name>` in the state store
    (controllers/lease.py), so this answers from any home sharing the store."""
    from skyform.state.db import open_state

    with open_state() as db:
        return db.get_lease(f"service/{name}") is not None


def remove(name: str) -> None:
    shutil.rmtree(service_dir(name), ignore_errors=True)


def require(name: str) -> ServiceRecord:
    record = read_record(name)
    if record is None:
        known = ", ".join(list_services()) or "none"
        raise SkyformError(
            f"no service named {name!r}", f"Services: {known}. See `skyform serve status`."
        )
    return record
