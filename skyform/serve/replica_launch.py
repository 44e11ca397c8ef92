"""One replica's cluster, through the same plan/apply path as every other cluster.

A replica is the service's task without `service:`, named `<service>-<id>`, with
SKYPILOT_SERVE_REPLICA_ID set as SkyPilot sets it, written next to the service's records;
`plan_task` plans it and `apply_plan` provisions it and starts its job (detached). On
`local` each replica runs inside its own network namespace (skyform/serve/sandbox.py): its
`run` is wrapped in `ip netns exec`, so it binds its port on its own address.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from skyform.errors import SkyformError
from skyform.serve.sandbox import Sandbox
from skyform.spec.models import is_uri


@dataclass(frozen=True)
class ReplicaInputs:
    """What every replica of one service is made from."""

    service: str
    task_file: Path
    folder: Path
    envs: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)


class _Quiet:
    """apply's progress reporting, sent to the controller's log."""

    def __init__(self, log: Any) -> None:
        self._log = log

    def stage(self, cluster: str, stage: str, detail: str = "") -> None:
        self._log(f"{cluster}: {stage} {detail}".rstrip())

    def event(self, cluster: str, stage: str, rank: int | None, message: str) -> None:
        self._log(f"{cluster}: {stage}: {message}")

    def log(self, cluster: str, line: Any) -> None:
        pass


def cluster_name(service: str, replica_id: int) -> str:
    return f"{service.lower().replace('_', '-').replace('.', '-')}-{replica_id}"


def write_replica_task(
    inputs: ReplicaInputs, replica_id: int, box: Sandbox | None
) -> tuple[Path, str]:
    """The replica's task file and cluster name."""
    raw = yaml.safe_load(inputs.task_file.read_text())
    if not isinstance(raw, dict):
        raise SkyformError(f"{inputs.task_file}: a service task file holds one task")
    raw.pop("service", None)
    cluster = cluster_name(inputs.service, replica_id)
    raw["name"] = cluster
    envs = dict(raw.get("envs") or {})
    envs.update(inputs.envs)
    envs["SKYPILOT_SERVE_REPLICA_ID"] = str(replica_id)
    raw["envs"] = envs
    base = inputs.task_file.resolve().parent
    workdir = raw.get("workdir")
    if isinstance(workdir, str) and not Path(workdir).expanduser().is_absolute():
        raw["workdir"] = str(base / workdir)
    mounts = raw.get("file_mounts") or {}
    for dst, src in list(mounts.items()):
        if isinstance(src, str) and not is_uri(src) and not Path(src).expanduser().is_absolute():
            mounts[dst] = str(base / src)
    if box is not None and raw.get("run"):
        raw["run"] = f"exec ip netns exec {box.name} bash -c {shlex.quote(str(raw['run']))}"
    path = inputs.folder / f"replica-{replica_id}.yaml"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        yaml.safe_dump(raw, out, sort_keys=False)
    return path, cluster


def launch(inputs: ReplicaInputs, task: Path, cluster: str, log: Any) -> str:
    """Plan and apply the replica's cluster (job detached); returns its infra."""
    from skyform.ops.applier import ApplyOptions
    from skyform.ops.apply import apply_plan
    from skyform.ops.plan import plan_task
    from skyform.plan.planfile import write_plan

    secrets = [f"{k}={v}" for k, v in inputs.secrets.items()]
    plan_path = task.with_suffix(".plan.json")
    result = plan_task(
        task,
        out=plan_path,
        cluster=cluster,
        load_kwargs={"secret_overrides": secrets, "environ": {}},
    )
    write_plan(result.plan, plan_path)
    outcomes = apply_plan(
        result.plan,
        plan_path,
        plan_path.read_bytes(),
        progress=_Quiet(log),
        options=ApplyOptions(detach=True, secret_overrides=secrets, take_over=True),
    )
    for outcome in outcomes:
        if outcome.failed:
            raise SkyformError(f"replica {cluster} failed to start: {outcome.message}")
    placement = result.plan.placement_for(cluster)
    return placement.offer.cloud if placement is not None else "local"


def teardown(cluster: str, log: Any) -> bool:
    """`skyform down` of the replica's cluster; False when it could not be torn down."""
    from skyform.config import load_config
    from skyform.ops.down import take_down
    from skyform.state.db import open_state

    db = open_state()
    try:
        if db.get_cluster(cluster) is None:
            return True
        take_down(db, load_config(), cluster, purge=False, emit=log)
        return True
    except SkyformError as exc:
        log(f"{cluster}: teardown failed: {exc.message}")
        return False
    finally:
        db.close()
