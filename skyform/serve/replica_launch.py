"""One replica's cluster: planned as every cluster is, brought up as managed jobs' are.

A replica is the service's task without `service:`, named `<service>-<id>`, with
SKYPILOT_SERVE_REPLICA_ID set as SkyPilot sets it, written next to the service's records;
`plan` places it, and its cluster is brought up and its job started (detached) as a managed
job's are (lifecycle/driven.py), through the ReplicaClusters the controller is given
(serve/clusters.py, ops/serve/replica_clusters.py). On `local` each replica runs inside its
own network namespace (skyform/serve/sandbox.py): its `run` is wrapped in `ip netns exec`,
so it binds its port on its own address.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from skyform.digests import sha256
from skyform.errors import SkyformError
from skyform.serve.sandbox import Sandbox
from skyform.spec.models import is_uri

if TYPE_CHECKING:
    from skyform.spec.inputs import TaskInputs


@dataclass(frozen=True)
class ReplicaInputs:
    """What every replica of one service version is made from: the task file's text as it
    was when the version was made (later edits change nothing until `serve update`), the
    service's folder, the `--env`/resource flags, and `base`: where its relative workdir and
    file mount sources start (the directory `serve up` / `serve update` ran in, as for
    `launch`; None: a version saved before skyform recorded it, its task file's folder)."""

    service: str
    task_file: Path
    folder: Path
    envs: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, str] = field(default_factory=dict)  # ResourceOverrides.recorded
    task_text: str | None = None  # None: read task_file
    base: Path | None = None

    def text(self) -> str:
        return self.task_text if self.task_text is not None else self.task_file.read_text()

    def paths_start(self) -> Path:
        return self.base if self.base is not None else self.task_file.resolve().parent

    def task_inputs(self) -> TaskInputs:
        """How a replica's task file is read: its secrets given, its relative paths from
        paths_start (a replica's file lives in the service's folder, read by a controller
        that runs wherever)."""
        from skyform.spec.inputs import TaskInputs

        return TaskInputs.given(secrets=self.secrets, base_dir=str(self.paths_start()))


def cluster_name(service: str, replica_id: int) -> str:
    return f"{service.lower().replace('_', '-').replace('.', '-')}-{replica_id}"


def replica_task(inputs: ReplicaInputs, placement: dict[str, str] | None = None) -> dict[str, Any]:
    """The task every replica of this version runs: the service's task without `service:`,
    the flags laid over it, then `placement` (the spot placer's `use_spot`/`infra`)."""
    from skyform.spec.overrides import ResourceOverrides, apply_overrides

    raw = yaml.safe_load(inputs.text())
    if not isinstance(raw, dict):
        raise SkyformError(f"{inputs.task_file}: a service task file holds one task")
    service = raw.pop("service", None)
    raw.pop("name", None)
    base = inputs.task_file.resolve().parent
    recorded = {**inputs.overrides, **(placement or {})}
    port = service.get("ports") if isinstance(service, dict) else None
    if isinstance(port, int) and "ports" not in recorded and not _opens_ports(raw):
        # the service port is opened on the replica's cluster (security group, firewall
        # rule, NodePort) as SkyPilot opens it, also when resources name no ports
        recorded["ports"] = str(port)
    if recorded:
        raw = apply_overrides(raw, ResourceOverrides.from_recorded(recorded, base), task_dir=base)
    envs = dict(raw.get("envs") or {})
    envs.update(inputs.envs)
    raw["envs"] = envs
    return raw


def _opens_ports(raw: dict[str, Any]) -> bool:
    """Whether any resources entry of the task (any_of / ordered too) names ports."""
    resources = raw.get("resources")
    entries: list[Any] = resources if isinstance(resources, list) else [resources]
    for entry in list(entries):
        if isinstance(entry, dict):
            for key in ("any_of", "ordered"):
                if isinstance(entry.get(key), list):
                    entries.extend(entry[key])
    return any(isinstance(e, dict) and e.get("ports") not in (None, [], "") for e in entries)


def hands_out_hosts(infra: str) -> bool:
    """Replicas placed on an ssh node pool: each plan picks a free host of the pool."""
    from skyform.infra import infra as row_of

    row = row_of(infra.split("/")[0])
    return row is not None and row.on_prem and row.name != "local"


def reuse_blocker(inputs: ReplicaInputs) -> str | None:
    """Why running replicas cannot simply be relabelled to this version (SkyPilot: any
    workdir or file_mounts may carry changed files), or None."""
    raw = replica_task(inputs)
    if raw.get("workdir"):
        return "the task has a workdir (its files may have changed)"
    if raw.get("file_mounts"):
        return "the task has file_mounts (their files may have changed)"
    return None


def replica_digest(inputs: ReplicaInputs) -> str:
    """Equal for two versions whose replicas run the very same task (`service:` aside)."""
    text = json.dumps(replica_task(inputs), sort_keys=True, default=str)
    return sha256(text)


def write_replica_task(
    inputs: ReplicaInputs,
    replica_id: int,
    box: Sandbox | None,
    placement: dict[str, str] | None = None,
) -> tuple[Path, str]:
    """The replica's task file and cluster name."""
    raw = replica_task(inputs, placement)
    cluster = cluster_name(inputs.service, replica_id)
    raw = {"name": cluster, **raw}
    raw["envs"]["SKYPILOT_SERVE_REPLICA_ID"] = str(replica_id)
    base = inputs.paths_start()
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


def cluster_lost(cluster: str) -> str | None:
    """Why the replica's cluster is gone (a preemption: its engine reports a node dead), or
    None while every node is alive or the cluster is not known (yet). The verdict is
    recovery/detect's, the one managed jobs act on. An engine that cannot answer raises:
    that is no verdict, and taken as "alive" it made a preempted replica whose process the
    preemption ended FAILED."""
    from skyform.config import load_config
    from skyform.recovery.detect import lost_nodes
    from skyform.stacks.registry import engine_for
    from skyform.state.db import open_state

    db = open_state()
    try:
        record = db.get_cluster(cluster)
        if record is None or record.handle is None:
            return None
        engine = engine_for(record.spec.offer.cloud, config=load_config(), state=db)
        dead = lost_nodes(engine, record.handle)
    finally:
        db.close()
    return ", ".join(dead) if dead else None
