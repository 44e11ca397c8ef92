"""A service's plan revisions: one per decision that changes its replicas, with the reason.

As a managed job saves a new plan per recovery, the controller saves a revision when the
service comes up, for every autoscaling decision that launches or terminates replicas, every
replacement after a preemption or failure, every update and rollback, every replica taken
down by `serve down --replica-id`: the replicas it wants (id, version, spot or on-demand or
fallback, where) after the decision. Revisions are files
`plans/<N>.json` (0600) in the service's folder; `skyform serve plans NAME` lists them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from skyform.paths import ensure_dir, write_atomic
from skyform.serve import state

Kind = Literal["up", "scale", "preemption", "replace", "update", "rollback", "down"]


class PlannedReplica(BaseModel):
    model_config = ConfigDict(extra="ignore")

    replica_id: int
    version: int
    role: str  # spot · on-demand · on-demand fallback
    infra: str | None = None  # the spot placer's location, or where it runs
    status: str


class ServiceRevision(BaseModel):
    model_config = ConfigDict(extra="ignore")

    revision: int
    created_at: float
    kind: Kind
    reason: str
    version: int
    target: int
    replicas: list[PlannedReplica]
    launched: list[int] = []
    terminated: list[int] = []


def plans_dir(name: str) -> Path:
    return state.service_dir(name) / "plans"


def save(name: str, revision: ServiceRevision) -> Path:
    folder = plans_dir(name)
    ensure_dir(folder)
    path = folder / f"{revision.revision}.json"
    write_atomic(path, revision.model_dump_json(indent=1), mode=0o600)
    return path


def load_all(name: str) -> list[ServiceRevision]:
    folder = plans_dir(name)
    if not folder.is_dir():
        return []
    out = []
    for path in folder.glob("*.json"):
        try:
            out.append(ServiceRevision.model_validate(json.loads(path.read_bytes())))
        except (OSError, ValueError):
            continue  # a torn file is skipped, as records are read elsewhere
    return sorted(out, key=lambda r: r.revision)
