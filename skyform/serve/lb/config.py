"""The load balancer's settings and its replica set, as files it reads (untrusted: validated).

The controller writes both by temp + rename; the LB re-reads the replica set when its file
changes, or takes it from `PUT /-/replicas` on the control port.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, Field, ValidationError

from skyform.config import ServeSettings
from skyform.errors import SkyformError
from skyform.frozen import Frozen
from skyform.paths import write_atomic
from skyform.spec.service_models import LbPolicy

LB_STREAM_TIMEOUT_SECONDS = 120.0  # SkyPilot's LB_STREAM_TIMEOUT
CLIENTS = ServeSettings()  # how long a client may send nothing (config.yaml `serve:`)
LB_MAX_ATTEMPTS = 3  # SkyPilot's LB_MAX_RETRY
MAX_BODY_BYTES = 100 * 1024 * 1024
MAX_REPLICAS = 4096
LB_PORTS = range(30001, 30101)  # SkyPilot's LBs take the first free port from 30001


_Strict = Frozen  # every load-balancer file is a frozen model that refuses unknown keys


M = TypeVar("M", bound=_Strict)


class LbConfig(_Strict):
    service: str
    host: str = "127.0.0.1"
    port: int = Field(ge=0, le=65535)
    control_host: str = "127.0.0.1"
    control_port: int = Field(default=0, ge=0, le=65535)
    policy: LbPolicy = "least_load"
    target_qps: float | dict[str, float] | None = None
    tls_keyfile: str | None = None
    tls_certfile: str | None = None
    replicas_file: str | None = None
    request_log: str | None = None
    # where the LB writes the ports it bound (port 0 = any free port), for whoever started it
    ports_file: str | None = None
    # the longest wait for the next byte from a replica (headers or body): a token stream may
    # run for minutes, as long as it keeps sending
    read_timeout_seconds: float = Field(default=LB_STREAM_TIMEOUT_SECONDS, gt=0)
    connect_timeout_seconds: float = Field(default=5.0, gt=0)
    # a client that sends nothing is closed (slow or stalled clients hold no connection):
    # its request line and headers, between requests, between parts of a body (serve/lb/
    # idle.py); a response the client is reading is never cut
    header_timeout_seconds: float = Field(default=CLIENTS.client_header_timeout, gt=0)
    keepalive_timeout_seconds: float = Field(default=CLIENTS.client_keepalive_timeout, gt=0)
    body_timeout_seconds: float = Field(default=CLIENTS.client_body_timeout, gt=0)
    max_attempts: int = Field(default=LB_MAX_ATTEMPTS, ge=1, le=10)
    max_body_bytes: int = Field(default=MAX_BODY_BYTES, ge=0)
    # processes serving the public port (serve/lb/workers.py); none set: one per CPU core
    workers: int | None = Field(default=None, ge=1, le=64)

    @property
    def scheme(self) -> str:
        return "https" if self.tls_certfile else "http"


class ReplicaEntry(_Strict):
    url: str = Field(pattern=r"^https?://[^/\s]+$")
    replica_id: int = Field(ge=0)
    version: int = Field(default=1, ge=1)
    accelerator: str | None = None


class ReplicaSet(_Strict):
    replicas: tuple[ReplicaEntry, ...] = Field(default=(), max_length=MAX_REPLICAS)


def free_lb_port() -> int:
    """The first free port of LB_PORTS (0: let the system choose)."""
    import socket

    for port in LB_PORTS:
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
            return port
    return 0


def load_config(path: str | os.PathLike[str]) -> LbConfig:
    return _load(LbConfig, Path(path))


def load_replica_set(path: str | os.PathLike[str]) -> ReplicaSet:
    return _load(ReplicaSet, Path(path))


def parse_replica_set(data: bytes) -> ReplicaSet:
    try:
        return ReplicaSet.model_validate_json(data)
    except ValidationError as exc:
        raise SkyformError(f"invalid replica set: {exc.errors()[0]['msg']}") from None


def write_json_atomic(path: str | os.PathLike[str], model: BaseModel) -> None:
    """temp + rename, 0600: a reader never sees half a file."""
    data = json.dumps(model.model_dump(mode="json"), sort_keys=True)
    write_atomic(Path(path), data, mode=0o600)


def _load(model: type[M], path: Path) -> M:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SkyformError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        raise SkyformError(f"{path}: {where}: {first['msg']}") from None
