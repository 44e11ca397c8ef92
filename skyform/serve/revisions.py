"""A service's plan revisions: one per decision that changes its replicas, with the reason.

As a managed job saves a new plan per recovery, the controller saves a revision when the
service comes up, for every autoscaling decision that launches or terminates replicas, every
replacement after a preemption or failure, every update and rollback, every replica taken
down by `serve down --replica-id`: the replicas it wants (id, version, spot or on-demand or
fallback, where) after the decision. Revisions are rows of the state store's one revision
table (state/revisions.py, owner `service/<name>`, numbered there), the replica set their
body; `skyform serve plans NAME` lists them, from any home sharing it.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

from skyform.serve import state
from skyform.state.revisions import Revision, Revisions, service_owner

Kind = Literal["up", "scale", "preemption", "replace", "update", "rollback", "down"]


class PlannedReplica(BaseModel):
    model_config = ConfigDict(extra="ignore")

    replica_id: int
    version: int
    role: str  # spot · on-demand · on-demand fallback
    infra: str | None = None  # the spot placer's location, or where it runs
    status: str


class ServiceRevision(BaseModel):
    """A revision as `serve plans` shows it: its row, and its body (the replica set)."""

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


# what the row holds; the body is the rest
_ROW = {"revision", "created_at", "kind", "reason"}


def save(
    name: str,
    kind: Kind,
    reason: str,
    *,
    version: int,
    target: int,
    replicas: list[PlannedReplica],
    launched: list[int],
    terminated: list[int],
) -> ServiceRevision:
    """Record the service's next revision (the store numbers it)."""
    body = {
        "version": version,
        "target": target,
        "replicas": [r.model_dump(mode="json") for r in replicas],
        "launched": launched,
        "terminated": terminated,
    }
    row = Revisions(state.store().db).add(
        service_owner(name), kind=kind, reason=reason, body=json.dumps(body).encode()
    )
    return _joined(row, body)


def _joined(row: Revision, body: object) -> ServiceRevision:
    if not isinstance(body, dict):
        raise ValueError("a revision's body is not a JSON object")
    fields = {k: v for k, v in body.items() if k not in _ROW}
    return ServiceRevision.model_validate({**fields, **{k: getattr(row, k) for k in _ROW}})


def load_all(name: str) -> list[ServiceRevision]:
    store = Revisions(state.store().db)
    out = []
    for row in store.list(service_owner(name)):
        try:
            out.append(_joined(row, json.loads(store.body(row) or b"")))
        except ValueError:
            continue  # a torn record is skipped, as records are read elsewhere
    return out
