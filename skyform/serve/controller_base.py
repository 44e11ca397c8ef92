"""What the service controller knows (shared by its parts: controller.py runs the loop,
replica_io.py launches, probes and tears down replicas, rollout.py runs updates)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skyform.errors import SkyformError
from skyform.infra import CONTEXT_SCOPED
from skyform.serve import revisions, state
from skyform.serve.autoscaler import Autoscaler, ReplicaView
from skyform.serve.clusters import ReplicaClusters
from skyform.serve.placer import SpotLocation, SpotPlacer
from skyform.serve.replica_launch import ReplicaInputs, replica_digest, reuse_blocker
from skyform.serve.replicas import ReplicaFacts, ReplicaStatus
from skyform.serve.updates import Rollout
from skyform.serve.versions import VersionRecord, inputs_of
from skyform.spec.models import TaskSpec
from skyform.spec.service_models import ServiceSpec

log = logging.getLogger("skyform.serve.controller")


def interval(name: str, default: float) -> float:
    try:
        return max(0.05, float(os.environ.get(name, default)))
    except ValueError:
        return default


@dataclass
class Replica:
    facts: ReplicaFacts
    role: str = "on-demand"  # spot · on-demand · on-demand fallback
    cluster: str = ""
    box: Any = None  # sandbox.Sandbox on local
    endpoint: str | None = None
    infra: str | None = None
    launched_at: float | None = None
    reason: str = ""
    exit_code: int | None = None  # of the user's process, once it ended
    last_lines: tuple[str, ...] = ()  # of its kept log (replica_logs.py)
    log_kept: bool = False
    busy: bool = False  # a launch or teardown is running
    probing: bool = False  # a probe is out (replica_io.py: _probe)
    engine_check: asyncio.Task[str | None] | None = None  # its engine asked: cluster gone?
    location: str | None = None  # the spot placer's choice
    launched_by: str = ""  # the plan revision that launched it: `revision 3 (scale)`


def spot_placement(placer: SpotPlacer | None, in_use: list[str]) -> dict[str, str]:
    """The resource flags of a new spot replica: where the placer sends it, if it has one."""
    if placer is None:
        return {"use-spot": "true"}
    return {"use-spot": "true", "infra": placer.select(in_use).infra}


@dataclass
class Version:
    record: VersionRecord
    inputs: ReplicaInputs
    spec: ServiceSpec
    digest: str
    reuse_blocker: str | None
    spot: bool  # the task asks for spot replicas
    placer: SpotPlacer | None = None  # spot_placer: dynamic_fallback
    secret_values: tuple[str, ...] = ()  # redacted from a failed replica's kept log


def placer_for(task: TaskSpec) -> SpotPlacer | None:
    """SkyPilot's SpotHedge over the places the replica's resources fit (cheapest offer per
    place). A place is what `infra:` can pin: cloud/region/zone, or an ssh pool as a whole."""
    from skyform.config import load_config
    from skyform.plan.catalog import load_catalog
    from skyform.plan.optimizer import default_clouds
    from skyform.serve.planning import catalog_offerings

    catalog = load_catalog(load_config())
    prices: dict[str, float] = {}
    for offering in catalog_offerings(task, catalog, default_clouds(catalog, None)):
        parts = offering.infra.split("/")
        place = "/".join(parts[:2]) if parts[0] in CONTEXT_SCOPED else offering.infra
        prices.setdefault(place, offering.hourly_cost)
    if not prices:
        return None
    return SpotPlacer([SpotLocation(infra, price) for infra, price in prices.items()])


def load_version(name: str, record: VersionRecord, secrets: dict[str, str]) -> Version:
    from skyform.spec import load_task_text
    from skyform.spec.inputs import TaskInputs
    from skyform.spec.overrides import ResourceOverrides

    inputs = inputs_of(name, record, secrets)
    flags = ResourceOverrides.from_recorded(record.overrides, inputs.task_file.resolve().parent)
    given = TaskInputs.given(
        envs=record.envs,
        secrets=secrets,
        resources=flags,
        base_dir=str(inputs.paths_start()),  # where `serve up` ran, not the controller's cwd
    )
    dag = load_task_text(record.task_text, path_label=record.task_path, inputs=given)
    spec = dag.tasks[0].service if len(dag.tasks) == 1 else None
    if spec is None:
        raise SkyformError(f"{record.task_path} (version {record.number}) has no service: section")
    task = dag.tasks[0]
    spot = all(r.use_spot for r in task.resources.alternatives())
    placer = placer_for(task) if spot and spec.replica_policy.spot_placer else None
    digest, blocker = replica_digest(inputs), reuse_blocker(inputs)
    secret_values = tuple(task.secret_values().values())
    return Version(record, inputs, spec, digest, blocker, spot, placer, secret_values)


class ControllerBase:
    name: str
    folder: Path  # the service's records (state.service_dir)
    record: state.ServiceRecord
    versions: dict[int, Version]
    replicas: dict[int, Replica]
    autoscaler: Autoscaler
    ready_versions: set[int]  # versions that had a READY replica
    rollout: Rollout | None
    stopping: bool
    tasks: set[asyncio.Task[None]]
    http: Any  # aiohttp.ClientSession while running
    revision: int
    clusters: ReplicaClusters  # plan, launch, tear down, read a replica's cluster (ops)
    decide_soon: bool = False  # run the next autoscaler decision now (a replica was taken)

    @property
    def latest(self) -> Version:
        return self.versions[self.record.version]

    @property
    def mode(self) -> str:
        return self.latest.record.mode

    @property
    def lb_replicas_url(self) -> str:
        """The load balancer's replica set on its control port (GET to read, PUT to set)."""
        return f"http://127.0.0.1:{self.record.control_port}/-/replicas"

    def min_replicas_of(self, version: int) -> int:
        known = self.versions.get(version)
        return known.spec.replica_policy.min_replicas if known else 1

    def views(self) -> list[ReplicaView]:
        return [
            ReplicaView(rid, r.facts.version, r.facts.status(), r.facts.is_spot)
            for rid, r in sorted(self.replicas.items())
        ]

    def background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self.tasks.add(task)  # a reference, so the task is not collected mid-flight
        task.add_done_callback(self.tasks.discard)

    def save_revision(
        self,
        kind: revisions.Kind,
        reason: str,
        launched: list[int] | None = None,
        terminated: list[int] | None = None,
    ) -> None:
        """A plan revision: the replicas wanted after this decision, and why."""
        gone = set(terminated or [])
        planned = [
            revisions.PlannedReplica(
                replica_id=rid,
                version=r.facts.version,
                role=r.role,
                infra=r.infra or r.location,
                status=r.facts.status().value,
            )
            for rid, r in sorted(self.replicas.items())
            if rid not in gone and r.facts.status() not in _GONE
        ]
        launched_ids = sorted(launched or [])
        try:
            saved = revisions.save(
                self.name,
                kind,
                reason,
                version=self.record.version,
                target=self.autoscaler.final_target,
                replicas=planned,
                launched=launched_ids,
                terminated=sorted(gone),
            )
        except SkyformError as exc:  # the store refused or is away
            self.revision += 1  # decided all the same: the next decision is not the first
            log.warning("cannot save plan revision (%s: %s): %s", kind, reason, exc.message)
        else:
            self.revision = saved.revision
            log.info("plan revision %d (%s): %s", self.revision, kind, reason)
        for rid in launched_ids:  # their launches say why (a cluster's usage reason)
            self.replicas[rid].launched_by = f"revision {self.revision} ({kind})"


_GONE = {ReplicaStatus.SHUTTING_DOWN, ReplicaStatus.PREEMPTED}
