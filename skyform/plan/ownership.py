"""Which task file a cluster belongs to, whatever way its path was typed.

State records the owner of a cluster as the task file's absolute, resolved path (`a/task.yaml`
from one directory and `task.yaml` from inside `a/` are one owner). A managed job's clusters
belong to the job. Records written by older skyform versions hold the path as the plan
recorded it (relative to the plan file): they are recognised when that spelling matches,
and otherwise count as "unknown" — neither this file's nor another's.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Relation(str, Enum):
    MINE = "mine"
    OTHER = "other"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Owner:
    path: str  # the task file, absolute and resolved (what state records)
    recorded: str | None = None  # as the plan records it; matches older state records


def relation(source: str | None, managed_job: int | None, owner: Owner | None) -> Relation:
    if owner is None:  # a plan not made from a task file (a managed job's own revision)
        return Relation.UNKNOWN
    if managed_job is not None:
        return Relation.OTHER
    if source is None:
        return Relation.UNKNOWN
    if source.startswith("/"):
        return Relation.MINE if source == owner.path else Relation.OTHER
    return Relation.MINE if source == owner.recorded else Relation.UNKNOWN


def describe_owner(source: str | None, managed_job: int | None) -> str:
    if managed_job is not None:
        return f"managed job {managed_job}"
    return f"the task file {source}" if source else "an unknown task file"
