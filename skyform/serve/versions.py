"""Service versions: what each version of a service is made from, saved when it is made.

`serve up` makes version 1 and every `serve update` the next one (SkyPilot's `add_version`,
max + 1, also after a rollback). A version is a row of the state store (service_versions):
the task file's text as it was then, its path, the directory the command ran in (where
relative workdir and mount sources start, as for `launch`), the `--env` values and
resource flags. Secrets are never saved: the controller holds them in memory, handed over
by `serve up` (its environment) and `serve update` (sealed in its request: rollout.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from skyform.serve import state
from skyform.serve.replica_launch import ReplicaInputs

MODES = ("rolling", "blue_green")


class VersionRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    number: int
    task_path: str
    task_text: str
    envs: dict[str, str] = {}
    overrides: dict[str, str] = {}  # ResourceOverrides.recorded
    mode: str = "rolling"  # how this version replaces the one before it
    # where relative paths start: the directory `serve up`/`serve update` ran in (None: a
    # version saved before skyform recorded it; they started at the task file's folder)
    base_dir: str | None = None


def save(name: str, version: VersionRecord) -> None:
    state.store().put_version(name, version.number, version.model_dump_json())


def load(name: str, number: int) -> VersionRecord | None:
    text = state.store().version(name, number)
    if text is None:
        return None
    try:
        return VersionRecord.model_validate(json.loads(text))
    except ValueError:
        return None


def forget(name: str, number: int) -> None:
    """Drop a version the controller refused (it never ran)."""
    state.store().delete_version(name, number)


def numbers(name: str) -> list[int]:
    return state.store().version_numbers(name)


def next_number(name: str) -> int:
    return max(numbers(name), default=0) + 1


def inputs_of(name: str, version: VersionRecord, secrets: dict[str, str]) -> ReplicaInputs:
    return ReplicaInputs(
        service=name,
        task_file=Path(version.task_path),
        folder=state.service_dir(name),
        envs=dict(version.envs),
        secrets=dict(secrets),
        overrides=dict(version.overrides),
        task_text=version.task_text,
        base=Path(version.base_dir) if version.base_dir is not None else None,
    )
