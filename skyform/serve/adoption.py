"""A service controller's start: its versions (with their secrets), its load balancer and its
replicas, taken over from the record when another controller drove the service before.

A controller started by `serve up` has the secrets in memory and starts the load balancer.
One that adopts the service (its controller was killed: serve/adoptable.py) reads the
secrets sealed in the store (sealed.py), keeps the running load balancer when its control
port answers (lb_process.find; else starts a new one and records its endpoint), and rebuilds
the replicas from the record: READY, NOT_READY and STARTING replicas with their cluster,
endpoint and sandbox are kept as they were and probed from now on (no relaunch); a replica
that was mid-launch or mid-teardown when the old controller died is torn down (and replaced
by the autoscaler's next decision), as is one recorded failed. Plan revisions and replica ids
go on from the last ones.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import replace
from pathlib import Path

from skyform.errors import SkyformError
from skyform.serve import lb_process, revisions, sandbox, sealed, state, versions
from skyform.serve.controller_base import Replica, load_version, log
from skyform.serve.lb.config import LbConfig, free_lb_port
from skyform.serve.replica_io import ReplicaIO
from skyform.serve.replica_launch import cluster_name
from skyform.serve.replicas import ReplicaFacts, ReplicaStatus, Step
from skyform.state.db import open_state

RUNNING = {ReplicaStatus.READY, ReplicaStatus.NOT_READY, ReplicaStatus.STARTING}


class Adoption(ReplicaIO):
    def load_versions(self, given: dict[str, str] | None) -> None:
        """The versions the service's replicas run, each with its secrets: `given` (by
        `serve up`, for the current version) else those sealed in the store."""
        stored = {}
        if given is None:
            with open_state() as db:
                stored = sealed.open_versions(db, self.name)
        wanted = {self.record.version, *self.record.active_versions}
        wanted |= {r.version for r in self.record.replicas}
        for number in sorted(wanted):
            saved = versions.load(self.name, number)
            if saved is None:
                if number == self.record.version:
                    raise SkyformError(f"service {self.name!r} has no saved version {number}")
                continue
            secrets = given if given is not None else stored.get(number, {})
            self.versions[number] = load_version(self.name, saved, secrets)
        if given:
            self.seal_secrets()

    def seal_secrets(self) -> None:
        """The versions' secrets into the store, for a controller that adopts the service."""
        by_version = {n: dict(v.inputs.secrets) for n, v in self.versions.items()}
        if not any(by_version.values()):
            return
        with open_state() as db:
            if not sealed.seal_versions(db, self.name, by_version):
                log.info("no SKYFORM_PASSPHRASE: the secrets stay in this controller's memory "
                         "only, and no other controller can adopt the service")  # fmt: skip

    def take_lb(self, config: LbConfig) -> None:
        """Keep the recorded load balancer if it runs here and answers, else start one."""
        if lb_process.find(self.record):
            log.info("kept the load balancer (pid %s, port %s)", self.record.lb_pid,
                     self.record.lb_port)  # fmt: skip
            return
        pid, port, control = lb_process.start(self.folder, config)
        self.record = self.record.model_copy(
            update={
                "lb_host": socket.gethostname(),
                "lb_pid": pid,
                "lb_port": port,
                "control_port": control,
                "endpoint": f"{self.latest.spec.scheme}://127.0.0.1:{port}",
            }
        )
        log.info("load balancer on port %d (pid %d)", port, pid)

    def lb_config(self, folder: Path, tls: tuple[str, str] | None) -> LbConfig:
        from skyform.config import load_config

        spec = self.latest.spec
        clients = load_config().serve
        return LbConfig(
            service=self.name,
            host="0.0.0.0",
            port=free_lb_port(),
            policy=spec.load_balancing_policy,
            target_qps=spec.replica_policy.target_qps_per_replica,
            tls_keyfile=tls[0] if tls else None,
            tls_certfile=tls[1] if tls else None,
            replicas_file=str(folder / "replicas.json"),
            request_log=str(folder / "requests.log"),
            ports_file=str(folder / "lb.ports.json"),
            header_timeout_seconds=clients.client_header_timeout,
            keepalive_timeout_seconds=clients.client_keepalive_timeout,
            body_timeout_seconds=clients.client_body_timeout,
        )

    def rebuild(self) -> None:
        """The record's replicas as this controller's own (see the module's docstring)."""
        now = time.time()
        for saved in self.record.replicas:
            rid = saved.replica_id
            facts = ReplicaFacts(rid, saved.version, is_spot=saved.is_spot)
            replica = Replica(
                facts,
                role=saved.role,
                cluster=saved.cluster or cluster_name(self.name, rid),
                box=sandbox.Sandbox(saved.sandbox) if saved.sandbox is not None else None,
                endpoint=saved.endpoint,
                infra=saved.infra,
                launched_at=saved.launched_at,
                reason=saved.reason,
                exit_code=saved.exit_code,
                last_lines=tuple(saved.last_lines),
                log_kept=saved.log_kept,
            )
            self.replicas[rid] = replica
            status = ReplicaStatus(saved.status)
            if status in RUNNING and saved.endpoint and saved.version in self.versions:
                ever_ready = status is not ReplicaStatus.STARTING
                replica.facts = replace(
                    facts,
                    launch=Step.SUCCEEDED,
                    ready_now=status is ReplicaStatus.READY,
                    first_ready_time=(saved.launched_at or now) if ever_ready else None,
                )
                if ever_ready:
                    self.ready_versions.add(saved.version)
                continue
            log.info("replica %d was %s when its controller died: torn down", rid, status.value)
            replica.reason = replica.reason or f"{status.value} when its controller died"
            self.teardown_replica(rid, scale_down=True)
        planned = revisions.load_all(self.name)
        self.revision = max((r.revision for r in planned), default=0)
        ids = [r.replica_id for r in self.record.replicas]
        ids += [rid for r in planned for rid in (*r.launched, *r.terminated)]
        self.next_id = max(ids, default=0) + 1
        log.info("adopted service %s: %d replica(s) kept, revision %d (pid %d)", self.name,
                 sum(r.facts.down is None for r in self.replicas.values()), self.revision,
                 os.getpid())  # fmt: skip


def was_driven(record: state.ServiceRecord) -> bool:
    """Another controller drove the service before (it started a load balancer)."""
    return record.lb_pid is not None or bool(record.replicas)
