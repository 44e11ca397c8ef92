"""task_digest: a stable fingerprint of what a task file asks for (plans record it).

The digest covers the normalized dag only: not the file path, line numbers, dict order
or hash seed. Secrets count by name only: a digest over a value could be tested offline
against guesses by anyone holding the plan. Alternatives inside one group are a set,
so they are sorted; the order of groups is meaning and is kept.
"""

from __future__ import annotations

import json
from typing import Any

from skyform.digests import sha256_hex
from skyform.spec.dag import Dag
from skyform.spec.models import TaskSpec

DIGEST_VERSION = 2  # 2: secrets by name only
OPTIONAL_EXT = ("stop_after", "down_after")  # `skyform:` keys left out of the digest when unset


def _canonical_task(task: TaskSpec) -> dict[str, Any]:
    data = task.model_dump(mode="json", exclude={"source", "resources"})
    data["secrets"] = task.secret_names()
    for key in OPTIONAL_EXT:  # fields added later: unset, a task keeps the digest it had
        if data["skyform"].get(key) is None:
            data["skyform"].pop(key, None)
    data["resources"] = [
        sorted(r.canonical_json() for r in group) for group in task.resources.groups
    ]
    return data


def canonical_dag(dag: Dag) -> dict[str, Any]:
    data: dict[str, Any] = {
        "digest_version": DIGEST_VERSION,
        "name": dag.name,
        "execution": dag.execution,
        "edges": sorted([list(e) for e in dag.edges]),
        "tasks": [_canonical_task(t) for t in dag.tasks],
    }
    if dag.primary_tasks:  # added later: a file without a job group keeps its digest
        data["primary_tasks"] = dag.primary_tasks
        data["termination_delay"] = dag.termination_delay
    return data


def task_digest(dag: Dag) -> str:
    """sha256 hex of the canonical JSON of the normalized dag."""
    text = json.dumps(canonical_dag(dag), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256_hex(text)
