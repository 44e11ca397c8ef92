"""A service's plan revisions: one per decision that changes its replicas, with the reason.

As a managed job saves a new plan per recovery, the controller saves a revision when the
service comes up, for every autoscaling decision that launches or terminates replicas, every
replacement after a preemption or failure, every update and rollback, every replica taken
down by `serve down --replica-id`: the replicas it wants (id, version, spot or on-demand or
fallback, where) after the decision. Revisions are rows of the state store
(service_revisions); `skyform serve plans NAME` lists them, from any home sharing it.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

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


def save(name: str, revision: ServiceRevision) -> None:
    state.store().add_revision(
        name, revision.revision, revision.created_at, revision.kind, revision.model_dump_json()
    )


def load_all(name: str) -> list[ServiceRevision]:
    out = []
    for text in state.store().revisions(name):
        try:
            out.append(ServiceRevision.model_validate(json.loads(text)))
        except ValueError:
            continue  # a torn record is skipped, as records are read elsewhere
    return sorted(out, key=lambda r: r.revision)
