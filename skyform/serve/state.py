"""A service's records, in the state store (state/services.py): the record its controller
writes (only when it changed), its replicas, versions and plan revisions, so every home that
shares the store sees the service and can manage it. Records are read leniently (unknown
keys ignored, a torn record is "no record"), like state records across skyform versions.

The files that stay on the controller's machine are in `$SKYFORM_HOME/serve/<name>/`
(0700): the controller's and load balancer's logs, the LB's files, each replica's task file
and plan. Records an older skyform kept there as JSON (service.json, versions/, plans/) are
moved into the store the first time this code opens it (legacy.py).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from enum import Enum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from skyform.config import ensure_dir, home
from skyform.errors import SkyformError
from skyform.state.services import ServiceRow, Services


class ServiceStatus(str, Enum):
    """A service's status, SkyPilot's (sky/serve/serve_state.py ServiceStatus); a replica's
    is serve/replicas.py's ReplicaStatus, a managed job's state/managed.py's."""

    def __str__(self) -> str:  # in messages as SkyPilot prints it: READY
        return self.value

    CONTROLLER_INIT = "CONTROLLER_INIT"  # registered, its controller not up yet
    REPLICA_INIT = "REPLICA_INIT"  # replicas launching, none READY yet
    READY = "READY"  # at least one replica READY
    NO_REPLICA = "NO_REPLICA"  # none running (scaled to zero, or all gone)
    FAILED = "FAILED"  # replicas failed and none is READY
    SHUTTING_DOWN = "SHUTTING_DOWN"
    FAILED_CLEANUP = "FAILED_CLEANUP"  # a replica could not be torn down
    CONTROLLER_FAILED = "CONTROLLER_FAILED"  # its controller died or could not start


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
    status: ServiceStatus = ServiceStatus.CONTROLLER_INIT
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


def make_dir(name: str) -> Path:
    ensure_dir(root())
    return ensure_dir(service_dir(name))


# -- the store ------------------------------------------------------------------------------

_open: dict[tuple[str, int, int], Services] = {}
_written: dict[tuple[str, str], tuple[object, ...]] = {}  # what this process last wrote


def store() -> Services:
    """The services of this command's state store: one connection per store, process and
    thread, opened on first use (the controller reads it every loop); the first opening
    moves an older skyform's JSON records into it."""
    from skyform.state.db import open_state
    from skyform.state.store import state_url

    url = state_url()
    key = (url, os.getpid(), threading.get_ident())
    found = _open.get(key)
    if found is None:
        found = _open[key] = Services(open_state(url=url))
        import_legacy(found)
    return found


def import_legacy(services: Services) -> list[str]:
    """Move this home's JSON records of an older skyform into the store (legacy.py)."""
    from skyform.serve.legacy import import_json_records
    from skyform.state.sqlcore import whoami

    return import_json_records(services, root(), owner=whoami(), host=this_host(), home=this_home())


def this_home() -> str:
    return str(home().resolve())


def this_host() -> str:
    return socket.gethostname()


def _parse(row: ServiceRow) -> ServiceRecord | None:
    try:
        data = json.loads(row.record)
        data["replicas"] = [json.loads(text) for text in row.replicas]
        return ServiceRecord.model_validate(data)
    except (ValueError, TypeError, ValidationError):
        return None


def _nothing_yet() -> bool:
    """No store and no older records: a command that only reads creates nothing."""
    from skyform.state.store import state_exists

    return not state_exists() and not root().is_dir()


def read_record(name: str) -> ServiceRecord | None:
    row = row_of(name)
    return _parse(row) if row is not None else None


def row_of(name: str) -> ServiceRow | None:
    """The service's row: who owns it, which home runs its controller."""
    return None if _nothing_yet() else store().get(name)


def columns_of(record: ServiceRecord) -> tuple[str, list[tuple[int, str, str]]]:
    text = record.model_dump_json(exclude={"replicas"})
    replicas = [(r.replica_id, r.status, r.model_dump_json()) for r in record.replicas]
    return text, replicas


def create_record(record: ServiceRecord) -> None:
    """Register a new service in the store; refused, naming the owner, when the name is
    taken (by this home or another one sharing the store)."""
    from skyform.state.sqlcore import whoami

    text, _ = columns_of(record)
    held = store().create(
        record.name,
        owner=whoami(),
        host=this_host(),
        home=this_home(),
        status=record.status.value,
        record=text,
    )
    if held is not None:
        raise SkyformError(
            f"service {record.name!r} already exists, made by {held.owner} "
            f"(its controller runs from SKYFORM_HOME {held.home} on {held.host})",
            f"Pick another name, or manage it: skyform serve status {record.name}",
        )


def write_record(record: ServiceRecord) -> bool:
    """Write the record when it differs from what this process wrote last (the controller
    calls this every loop: no write per loop on a shared database); False when the service
    is gone from the store (taken down from another home)."""
    text, replicas = columns_of(record)
    key = (_store_key(), record.name)
    written = (record.status, record.endpoint, text, replicas)
    if _written.get(key) == written:
        return True
    ok = store().put(
        record.name, status=record.status.value, endpoint=record.endpoint, record=text,
        replicas=replicas,
    )  # fmt: skip
    if ok:
        _written[key] = written
    return ok


def _store_key() -> str:
    from skyform.state.store import state_url

    return state_url()


def claim(name: str) -> None:
    """The controller starting (or adopting the service) records that it runs from this
    home on this machine: where its logs are, whose key seals a same-home update."""
    store().claim(name, host=this_host(), home=this_home())


def list_services() -> list[str]:
    return [] if _nothing_yet() else store().names()


def controller_alive(name: str) -> bool:
    """A live controller holds the service's lease `service/<name>` in the state store
    (controllers/lease.py), so this answers from any home sharing the store: a holder on
    this machine counts until its pid is gone, one elsewhere until the lease expires."""
    from skyform.controllers.lease import service_lease

    if _nothing_yet():
        return False
    return store().db.get_lease(service_lease(name)) is not None


def runs_here(row: ServiceRow) -> bool:
    """The service's controller runs from this SKYFORM_HOME on this machine."""
    return row.host == this_host() and row.home == this_home()


def remove(name: str) -> None:
    """Forget the service: its rows in the store and its folder here."""
    store().delete(name)
    _written.pop((_store_key(), name), None)
    shutil.rmtree(service_dir(name), ignore_errors=True)


def require(name: str) -> ServiceRecord:
    record = read_record(name)
    if record is None:
        known = ", ".join(list_services()) or "none"
        raise SkyformError(
            f"no service named {name!r}", f"Services: {known}. See `skyform serve status`."
        )
    return record
