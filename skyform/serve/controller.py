"""The service controller: one detached process per service, run as
`python -m skyform.serve.controller NAME`, as managed jobs have theirs.

It starts the load balancer, launches replicas through the plan/apply path (each in its own
network namespace on `local`), probes them, keeps the LB's replica set to the READY ones,
asks the autoscaler for the target, replaces replicas that failed, and on SIGTERM (`serve
down`) drains and tears everything down. Its decisions come from the pure pieces
(replicas.py, autoscaler.py); this module only does their I/O. Probe and decision intervals
are SkyPilot's (10 s, 20 s); SKYFORM_SERVE_PROBE_INTERVAL / SKYFORM_SERVE_DECISION_INTERVAL
shorten them (tests, demos).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skyform.errors import SkyformError
from skyform.serve import sandbox, state
from skyform.serve.autoscaler import Autoscaler, ReplicaView, window_qps
from skyform.serve.lb.config import (
    LbConfig,
    ReplicaEntry,
    ReplicaSet,
    free_lb_port,
    write_json_atomic,
)
from skyform.serve.lb.requestlog import read_counts
from skyform.serve.probe import probe, probe_request
from skyform.serve.replica_launch import ReplicaInputs, launch, teardown, write_replica_task
from skyform.serve.replicas import ReplicaFacts, ReplicaStatus, Step, kept_after_teardown
from skyform.spec.service_models import ServiceSpec

LAUNCHES_AT_ONCE = 4
log = logging.getLogger("skyform.serve.controller")


def _interval(name: str, default: float) -> float:
    try:
        return max(0.05, float(os.environ.get(name, default)))
    except ValueError:
        return default


@dataclass
class Replica:
    facts: ReplicaFacts
    cluster: str = ""
    box: sandbox.Sandbox | None = None
    endpoint: str | None = None
    infra: str | None = None
    launched_at: float | None = None
    reason: str = ""
    busy: bool = False  # a launch or teardown is running


class ServiceController:
    def __init__(self, name: str) -> None:
        self.name = name
        self.folder = state.service_dir(name)
        self.record = state.require(name)
        inputs = json.loads((self.folder / "inputs.json").read_text())
        secrets = json.loads(os.environ.pop("SKYFORM_SERVE_SECRETS", "{}") or "{}")
        self.inputs = ReplicaInputs(
            service=name,
            task_file=Path(self.record.task_path),
            folder=self.folder,
            envs=dict(inputs.get("envs") or {}),
            secrets=secrets,
        )
        self.spec = self._load_spec(secrets)
        self.autoscaler = Autoscaler(self.spec.replica_policy)
        self.replicas: dict[int, Replica] = {}
        self.next_id = 1
        self.stopping = False
        self.lb: subprocess.Popen[bytes] | None = None
        self.probe_every = _interval("SKYFORM_SERVE_PROBE_INTERVAL", 10.0)
        self.autoscaler.interval = _interval("SKYFORM_SERVE_DECISION_INTERVAL", 20.0)
        self.slots = asyncio.Semaphore(LAUNCHES_AT_ONCE)
        self.tasks: set[asyncio.Task[None]] = set()
        self.ever_ready = False  # any replica of the current version passed a probe
        self.halted = False

    def _load_spec(self, secrets: dict[str, str]) -> ServiceSpec:
        from skyform.spec import load_task

        dag = load_task(
            self.inputs.task_file,
            env_overrides=[f"{k}={v}" for k, v in self.inputs.envs.items()],
            secret_overrides=[f"{k}={v}" for k, v in secrets.items()],
            environ={},
        )
        spec = dag.tasks[0].service
        if spec is None:
            raise SkyformError(f"{self.inputs.task_file} has no service: section any more")
        return spec

    # -- main loop ------------------------------------------------------------------------

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._stop)
        self._start_lb()
        import aiohttp

        next_probe = next_decision = 0.0
        async with aiohttp.ClientSession() as http:
            while not self.stopping:
                now = time.time()
                if now >= next_decision:
                    self._decide(now)
                    next_decision = now + self.autoscaler.next_interval()
                if now >= next_probe:
                    await self._probe_all(http, now)
                    next_probe = now + self.probe_every
                self._replace_failed()
                self._publish()
                await asyncio.sleep(0.2)
        await self._shutdown()

    def _stop(self) -> None:
        self.stopping = True

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self.tasks.add(task)  # a reference, so the task is not collected mid-flight
        task.add_done_callback(self.tasks.discard)

    def _task_relative(self, path: str) -> str:
        """TLS files as the task file names them: `~` expanded, relative to its folder."""
        return str(self.inputs.task_file.parent / Path(path).expanduser())

    def _start_lb(self) -> None:
        port = free_lb_port()
        config = LbConfig(
            service=self.name,
            host="0.0.0.0",
            port=port,
            policy=self.spec.load_balancing_policy,
            target_qps=self.spec.replica_policy.target_qps_per_replica,
            tls_keyfile=self._task_relative(self.spec.tls.keyfile) if self.spec.tls else None,
            tls_certfile=self._task_relative(self.spec.tls.certfile) if self.spec.tls else None,
            replicas_file=str(self.folder / "replicas.json"),
            request_log=str(self.folder / "requests.log"),
            ports_file=str(self.folder / "lb.ports.json"),
            parent_pid=os.getpid(),
        )
        write_json_atomic(self.folder / "replicas.json", ReplicaSet())
        write_json_atomic(self.folder / "lb.json", config)
        out = open(self.folder / "lb.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            self.lb = subprocess.Popen(
                [sys.executable, "-m", "skyform.serve.lb", str(self.folder / "lb.json")],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        finally:
            out.close()
        deadline = time.monotonic() + 30
        ports = self.folder / "lb.ports.json"
        while not ports.exists():
            if self.lb.poll() is not None or time.monotonic() > deadline:
                raise SkyformError("the load balancer did not start; see its log")
            time.sleep(0.05)
        bound = json.loads(ports.read_text())
        self.record = self.record.model_copy(
            update={
                "lb_port": bound["port"],
                "control_port": bound["control_port"],
                "endpoint": f"{self.spec.scheme}://127.0.0.1:{bound['port']}",
                "controller_pid": os.getpid(),
                "status": state.REPLICA_INIT,
            }
        )
        state.write_record(self.record)
        log.info("load balancer on port %d", bound["port"])

    # -- decisions ------------------------------------------------------------------------

    def _views(self) -> list[ReplicaView]:
        return [
            ReplicaView(rid, r.facts.version, r.facts.status(), r.facts.is_spot)
            for rid, r in sorted(self.replicas.items())
        ]

    def _decide(self, now: float) -> None:
        qps = window_qps(read_counts(self.folder / "requests.log"), now)
        self.autoscaler.tick(qps, self._views())
        if self._halted():
            if not self.halted:
                log.warning("version %d never became READY and a replica failed for good: "
                            "no more launches (fix the task, then serve update)",
                            self.record.version)  # fmt: skip
            self.halted = True
            return
        decision = self.autoscaler.decide(self._views(), self.record.version, ready_spot=0)
        if decision:
            log.info("autoscaler (qps %.3f, target %d): %s", qps, self.autoscaler.target,
                     decision.reason)  # fmt: skip
        for _ in decision.launch:
            rid, self.next_id = self.next_id, self.next_id + 1
            self.replicas[rid] = Replica(ReplicaFacts(rid, self.record.version))
            self._background(self._launch(rid))
        for rid in decision.terminate:
            self._teardown(rid, scale_down=True)

    def _halted(self) -> bool:
        """SkyPilot's crash-loop rule on facts (a failed replica being torn down still
        counts): the version was never READY and one of its replicas failed for good."""
        version = self.record.version
        return not self.ever_ready and any(
            r.facts.version == version and r.facts.unrecoverable() for r in self.replicas.values()
        )

    def _replace_failed(self) -> None:
        for rid, replica in list(self.replicas.items()):
            if not replica.busy and replica.facts.needs_teardown():
                replica.reason = replica.facts.status().value
                self._teardown(rid, scale_down=False)

    # -- replica I/O ----------------------------------------------------------------------

    async def _launch(self, rid: int) -> None:
        replica = self.replicas[rid]
        replica.busy = True
        async with self.slots:
            if replica.facts.down is not None:
                return  # scaled down while waiting for a slot: its teardown owns `busy`
            if self.stopping:
                replica.busy = False
                return
            replica.facts = replica.facts.launching()
            try:
                replica.box = await asyncio.to_thread(sandbox.create)
                task, replica.cluster = await asyncio.to_thread(
                    write_replica_task, self.inputs, rid, replica.box
                )
                replica.infra = await asyncio.to_thread(
                    launch, self.inputs, task, replica.cluster, log.info
                )
                replica.endpoint = f"http://{replica.box.address}:{self.spec.ports}"
                replica.launched_at = time.time()
                replica.facts = replica.facts.launched(True)
                log.info("replica %d launched at %s", rid, replica.endpoint)
            except Exception as exc:  # any launch failure is FAILED_PROVISION, not a crash
                replica.reason = exc.message if isinstance(exc, SkyformError) else repr(exc)
                log.warning("replica %d failed to launch: %s", rid, replica.reason)
                replica.facts = replica.facts.launched(False)
            finally:
                replica.busy = False

    def _teardown(self, rid: int, *, scale_down: bool) -> None:
        replica = self.replicas[rid]
        if replica.facts.down is not None:
            return
        replica.facts = replica.facts.tearing_down(scale_down=scale_down)
        replica.busy = True
        self._background(self._down(rid))

    async def _down(self, rid: int) -> None:
        replica = self.replicas[rid]
        ok = True
        if replica.cluster:
            ok = await asyncio.to_thread(teardown, replica.cluster, log.info)
        if replica.box is not None:
            await asyncio.to_thread(sandbox.destroy, replica.box)
        replica.facts = replica.facts.torn_down(ok)
        replica.busy = False
        if not kept_after_teardown(replica.facts, self.record.version) and ok:
            del self.replicas[rid]

    async def _probe_all(self, http: object, now: float) -> None:
        targets = [
            (rid, r)
            for rid, r in self.replicas.items()
            if r.facts.probed_now() and r.endpoint is not None and not r.busy
        ]
        spec = self.spec.readiness_probe
        results = await asyncio.gather(
            *(probe(http, probe_request(spec, r.endpoint or "")) for _, r in targets)
        )
        for (rid, replica), ok in zip(targets, results, strict=True):
            before = replica.facts.status()
            replica.facts = replica.facts.probed(ok, now, spec.initial_delay_seconds)
            after = replica.facts.status()
            if after is not before:
                log.info("replica %d: %s -> %s", rid, before.value, after.value)
            if after is ReplicaStatus.READY:
                self.ever_ready = True
            if after is ReplicaStatus.READY and self.record.ready_since is None:
                self.record = self.record.model_copy(update={"ready_since": now})

    # -- what others read -----------------------------------------------------------------

    def _publish(self) -> None:
        ready = [
            ReplicaEntry(url=r.endpoint, replica_id=rid, version=r.facts.version)
            for rid, r in sorted(self.replicas.items())
            if r.facts.status() is ReplicaStatus.READY and r.endpoint
        ]
        wanted = ReplicaSet(replicas=tuple(ready))
        current = self.folder / "replicas.json"
        try:
            if current.read_text() != json.dumps(wanted.model_dump(mode="json"), sort_keys=True):
                write_json_atomic(current, wanted)
        except OSError as exc:
            log.error("cannot write the replica set (%s): shutting down", exc)
            self.stopping = True
        records = [
            state.ReplicaRecord(
                replica_id=rid,
                version=r.facts.version,
                cluster=r.cluster,
                status=r.facts.status().value,
                endpoint=r.endpoint,
                infra=r.infra,
                sandbox=r.box.index if r.box else None,
                launched_at=r.launched_at,
                reason=r.reason,
            )
            for rid, r in sorted(self.replicas.items())
        ]
        self.record = self.record.model_copy(
            update={"replicas": records, "status": self._service_status()}
        )
        self._save()

    def _save(self) -> None:
        """Write the record; a service whose folder was removed is taken down."""
        try:
            state.write_record(self.record)
        except OSError as exc:
            if not self.stopping:
                log.error("cannot write the service record (%s): shutting down", exc)
            self.stopping = True

    def _service_status(self) -> str:
        if self.stopping:
            return state.SHUTTING_DOWN
        statuses = [r.facts.status() for r in self.replicas.values()]
        if ReplicaStatus.READY in statuses:
            return state.READY
        if any(s in (ReplicaStatus.PENDING, ReplicaStatus.PROVISIONING, ReplicaStatus.STARTING)
               for s in statuses):  # fmt: skip
            return state.REPLICA_INIT
        if any(s.value.startswith("FAILED") for s in statuses):
            return state.FAILED
        return state.NO_REPLICA

    async def _shutdown(self) -> None:
        log.info("shutting down")
        self.record = self.record.model_copy(update={"status": state.SHUTTING_DOWN})
        self._save()
        with contextlib.suppress(OSError):
            write_json_atomic(self.folder / "replicas.json", ReplicaSet())
        while any(r.busy and r.facts.launch is Step.RUNNING for r in self.replicas.values()):
            await asyncio.sleep(0.2)  # a launch in flight finishes, then goes down with the rest
        for rid in list(self.replicas):
            self._teardown(rid, scale_down=True)
        while any(r.busy for r in self.replicas.values()):
            await asyncio.sleep(0.2)
        if self.lb is not None:
            self.lb.terminate()
            self.lb.wait(10)
        failed = [r.cluster for r in self.replicas.values() if r.facts.down is Step.FAILED]
        if failed:
            self.record = self.record.model_copy(
                update={"status": state.FAILED_CLEANUP, "reason": f"left: {', '.join(failed)}"}
            )
            self._save()
            return
        state.remove(self.name)


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    name = argv[0]
    with open(state.lock_path(name), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.error("another controller runs service %s", name)
            return 1
        try:
            asyncio.run(ServiceController(name).run())
        except SkyformError as exc:
            log.error("%s", exc.message)
            record = state.read_record(name)
            if record is not None:
                failed = {"status": state.CONTROLLER_FAILED, "reason": exc.message}
                state.write_record(record.model_copy(update=failed))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
