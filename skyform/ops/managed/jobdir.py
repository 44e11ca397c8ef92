"""A managed job's directory under SKYFORM_HOME/jobs/<id> (0700).

task.yaml        the task file as launched (0600: it may hold secrets); re-plans read this
                 copy, so editing the original during a run changes nothing
inputs.json      --env / --secret values resolved at launch (0600), and the resource flags
                 (--gpus ...), for the controller
plans/rev-N.json every plan revision applied (N = 1 at launch, +1 per recovery)
logs/            every attempt's output per node, copied while it runs (logmirror.py)
controller.log   the controller's own output
controller.lock  held by the live controller (flock), so there is never a second one
"""

from __future__ import annotations

import json
from pathlib import Path

from skyform.config import confined, ensure_dir, home
from skyform.paths import write_atomic
from skyform.state.managed import ManagedJobRecord


def job_dir(job_id: int) -> Path:
    return ensure_dir(confined(home() / "jobs", str(job_id)))


def plans_dir(job_id: int) -> Path:
    return ensure_dir(job_dir(job_id) / "plans")


def revision_path(job_id: int, revision: int) -> Path:
    return plans_dir(job_id) / f"rev-{revision}.json"


def logs_dir(job_id: int) -> Path:
    return ensure_dir(job_dir(job_id) / "logs")


def controller_log(job_id: int) -> Path:
    return job_dir(job_id) / "controller.log"


def controller_lock(job_id: int) -> Path:
    return job_dir(job_id) / "controller.lock"


def save_task(job_id: int, data: bytes) -> Path:
    path = job_dir(job_id) / "task.yaml"
    write_atomic(path, data, mode=0o600)
    return path


def has_task(job_id: int) -> bool:
    """This SKYFORM_HOME holds the job's task copy (else it comes from the store: sealed.py)."""
    return (job_dir(job_id) / "task.yaml").is_file()


def saved_task(job_id: int) -> bytes:
    return (job_dir(job_id) / "task.yaml").read_bytes()


def save_inputs(
    job_id: int,
    *,
    envs: list[str],
    secrets: list[str],
    overrides: dict[str, str] | None = None,
    base_dir: str | None = None,
) -> None:
    """`K=V` overrides, resolved (no bare `K` left): the controller has no shell env. The
    resource flags as the plan records them (ResourceOverrides.recorded); `base_dir`: where
    the task's relative paths start (the directory `jobs launch` ran in)."""
    inputs: dict = {"envs": envs, "secrets": secrets, "overrides": overrides or {}}
    if base_dir is not None:
        inputs["base_dir"] = base_dir
    data = json.dumps(inputs, sort_keys=True).encode()
    write_atomic(job_dir(job_id) / "inputs.json", data, mode=0o600)


def paths_start(record: ManagedJobRecord) -> Path:
    """Where the job's relative workdir and mount sources start: the directory `jobs launch`
    ran in (its plans record the paths inside it relative to it); the task file's folder for
    a job launched before skyform recorded that directory."""
    base = load_inputs(record.id)["base_dir"]
    return Path(base) if base is not None else Path(record.task_file).parent


def load_inputs(job_id: int) -> dict:
    """What save_inputs wrote; a key an older skyform did not write reads as empty."""
    path = job_dir(job_id) / "inputs.json"
    inputs = json.loads(path.read_text()) if path.exists() else {}
    base_dir = inputs.get("base_dir")
    return {
        "envs": list(inputs.get("envs", [])),
        "secrets": list(inputs.get("secrets", [])),
        "overrides": dict(inputs.get("overrides", {})),
        "base_dir": base_dir if isinstance(base_dir, str) else None,
    }


def forget_secrets(job_id: int) -> None:
    """Once the job is over, the controller needs no secret values any more."""
    path = job_dir(job_id) / "inputs.json"
    if path.exists():
        inputs = json.loads(path.read_text())
        inputs["secrets"] = [s.split("=", 1)[0] + "=" for s in inputs.get("secrets", [])]
        write_atomic(path, json.dumps(inputs, sort_keys=True).encode(), mode=0o600)
