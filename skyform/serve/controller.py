"""The service controller: one detached process per service, run as
`python -m skyform.serve.controller NAME`, as managed jobs have theirs.

It starts the load balancer, launches replicas through the plan/apply path (each in its own
network namespace on `local`), probes them, keeps the LB's replica set to the READY replicas
of the active versions, asks the autoscaler for the target, replaces replicas that failed or
were preempted, runs updates (rollout.py), saves a plan revision per decision, and on
SIGTERM (`serve down`) drains and tears everything down. Its decisions come from the pure
pieces (replicas.py, autoscaler.py, updates.py); replica_io.py does their I/O. Probe and
decision intervals are SkyPilot's (10 s, 20 s); SKYFORM_SERVE_PROBE_INTERVAL /
SKYFORM_SERVE_DECISION_INTERVAL shorten them (tests, demos).
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
from collections.abc import Callable
from typing import Any, TypeVar

from skyform.errors import SkyformError
from skyform.serve import control, revisions, state, versions
from skyform.serve.autoscaler import Autoscaler, Launch
from skyform.serve.controller_base import (
    Version,
    interval,
    load_version,
    log,
    spot_placement,
)
from skyform.serve.lb.config import (
    LbConfig,
    ReplicaEntry,
    ReplicaSet,
    free_lb_port,
    write_json_atomic,
)
from skyform.serve.lbstats import LbStats
from skyform.serve.replica_io import LAUNCHES_AT_ONCE
from skyform.serve.replicas import ReplicaStatus, Step, routed
from skyform.serve.rollout import Rollouts
from skyform.serve.updates import active_versions

T = TypeVar("T")
LB_PUSH_TIMEOUT = 2.0  # seconds; the LB answers a PUT at once unless it is wedged
LB_STOP_SECONDS = 10.0  # for the LB's in-flight requests to end at shutdown, then it is killed


class ServiceController(Rollouts):
    def __init__(self, name: str) -> None:
        self.name = name
        self.folder = state.service_dir(name)
        self.record = state.require(name)
        secrets = json.loads(os.environ.pop("SKYFORM_SERVE_SECRETS", "{}") or "{}")
        self.versions: dict[int, Version] = {}
        first = versions.load(name, self.record.version)
        if first is None:
            raise SkyformError(f"service {name!r} has no saved version {self.record.version}")
        self.versions[first.number] = load_version(name, first, secrets)
        self.autoscaler = Autoscaler(self.latest.spec.replica_policy)
        self.replicas = {}
        self.next_id = 1
        self.revision = 0
        self.stopping = False
        self.lb: subprocess.Popen[bytes] | None = None
        self.probe_every = interval("SKYFORM_SERVE_PROBE_INTERVAL", 10.0)
        self.autoscaler.interval = interval("SKYFORM_SERVE_DECISION_INTERVAL", 20.0)
        self.slots = asyncio.Semaphore(LAUNCHES_AT_ONCE)
        self.tasks: set[asyncio.Task[None]] = set()
        self.lost: list[int] = []
        self.ready_versions: set[int] = set()
        self.rollout = None
        self.halted = False
        self.http: Any = None

    # -- main loop ------------------------------------------------------------------------

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._stop)
        self.request_key = control.make_key(self.name)
        self._start_lb()
        import aiohttp

        next_probe = next_decision = next_request = next_heartbeat = 0.0
        async with aiohttp.ClientSession() as http:
            self.http = http
            self.stats = LbStats(self.name)
            while not self.stopping:
                now = time.time()
                if now >= next_request:  # serve update / down from any home (control.py)
                    next_request = now + control.REQUEST_POLL_SECONDS
                    self._in_store(self.answer_requests)
                if now >= next_heartbeat:
                    next_heartbeat = now + state.HEARTBEAT_SECONDS
                    if self._in_store(lambda: state.heartbeat(self.name)) is False:
                        log.error("the service is gone from the state store: shutting down")
                        self.stopping = True
                await self.stats.maybe_record(http, self.record.control_port, now)
                lost = self.take_lost()  # found by an engine check: a revision of its own
                if lost:
                    self._replace_preempted(lost)
                if now >= next_decision or self.decide_soon:
                    self.decide_soon = False
                    self._decide(now)
                    next_decision = now + self.autoscaler.next_interval()
                if now >= next_probe:
                    self.probe_all(now)
                    next_probe = now + self.probe_every
                self._replace_failed()
                await self._publish()
                await asyncio.sleep(0.2)
            await self._shutdown()

    def _in_store(self, work: Callable[[], T]) -> T | None:
        """The store's work of one loop; a store away (beyond its reconnect window) costs
        that loop's requests or heartbeat, never the replicas being served."""
        try:
            return work()
        except SkyformError as exc:
            log.warning("the state store did not answer: %s", exc.message)
            return None

    def _stop(self) -> None:
        self.stopping = True

    def _task_relative(self, path: str) -> str:
        """TLS files as the task file names them: `~` expanded, relative paths from where
        `serve up` / `serve update` ran, like the replicas' workdir and mounts."""
        from pathlib import Path

        return str(self.latest.inputs.paths_start() / Path(path).expanduser())

    def _start_lb(self) -> None:
        from skyform.config import load_config

        spec = self.latest.spec
        port = free_lb_port()
        clients = load_config().serve
        config = LbConfig(
            service=self.name,
            host="0.0.0.0",
            port=port,
            policy=spec.load_balancing_policy,
            target_qps=spec.replica_policy.target_qps_per_replica,
            tls_keyfile=self._task_relative(spec.tls.keyfile) if spec.tls else None,
            tls_certfile=self._task_relative(spec.tls.certfile) if spec.tls else None,
            replicas_file=str(self.folder / "replicas.json"),
            request_log=str(self.folder / "requests.log"),
            ports_file=str(self.folder / "lb.ports.json"),
            parent_pid=os.getpid(),
            header_timeout_seconds=clients.client_header_timeout,
            keepalive_timeout_seconds=clients.client_keepalive_timeout,
            body_timeout_seconds=clients.client_body_timeout,
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
                "endpoint": f"{spec.scheme}://127.0.0.1:{bound['port']}",
                "controller_pid": os.getpid(),
                "status": state.REPLICA_INIT,
            }
        )
        state.write_record(self.record)
        log.info("load balancer on port %d", bound["port"])

    # -- decisions ------------------------------------------------------------------------

    def _decide(self, now: float, cause: str | None = None, lost: tuple[int, ...] = ()) -> None:
        """One autoscaler decision; `cause` names a preemption that asked for it (the
        revision is then a preemption's, with the replacements it launched)."""
        self.autoscaler.tick(self._qps(), self.views())
        self.check_rollback(now)
        if self._halted():
            if not self.halted:
                log.warning("version %d never became READY and a replica failed for good: "
                            "no more launches (fix the task, then serve update)",
                            self.record.version)  # fmt: skip
            self.halted = True
            return
        self.halted = False
        version = self.record.version
        ready_spot = sum(
            1
            for v in self.views()
            if v.version == version and v.is_spot and v.status is ReplicaStatus.READY
        )
        decision = self.autoscaler.decide(self.views(), version, ready_spot=ready_spot)
        launched = [self._launch_one(item) for item in decision.launch]
        for rid in decision.terminate:
            self.teardown_replica(rid, scale_down=True)
        if cause is not None:
            self.save_revision("preemption", cause, launched, [*lost, *decision.terminate])
        elif decision:
            kind: revisions.Kind = "up" if self.revision == 0 else "scale"
            why = f"autoscaler (qps {self._qps():.3f}, target {self.autoscaler.target}): "
            self.save_revision(kind, why + decision.reason, launched, list(decision.terminate))
        self.retire_outdated()

    def _launch_one(self, item: Launch) -> int:
        policy = self.latest.spec.replica_policy
        placement: dict[str, str] = {}
        if item.use_spot or (item.use_spot is None and self.latest.spot):
            in_use = [
                r.location for r in self.replicas.values() if r.location and r.facts.down is None
            ]
            role, placement = "spot", spot_placement(self.latest.placer, in_use)
        elif item.use_spot is None:
            role = "on-demand"
        else:
            base = policy.base_ondemand_fallback_replicas
            ondemand = sum(
                1
                for r in self.replicas.values()
                if r.facts.version == item.version and not r.facts.is_spot
                and r.facts.down is None
            )  # fmt: skip
            role = "on-demand" if ondemand < base else "on-demand fallback"
            placement = {"use-spot": "false"}
        return self.new_replica(item.version, role, placement or None)

    def _halted(self) -> bool:
        """SkyPilot's crash-loop rule on facts (a failed replica being torn down still
        counts): the version was never READY and one of its replicas failed for good."""
        version = self.record.version
        return version not in self.ready_versions and any(
            r.facts.version == version and r.facts.unrecoverable() for r in self.replicas.values()
        )

    def _replace_failed(self) -> None:
        for rid, replica in list(self.replicas.items()):
            if not replica.busy and replica.facts.needs_teardown():
                status = replica.facts.status().value
                replica.reason = replica.reason or status
                self.teardown_replica(rid, scale_down=False)
                if not self._halted():
                    self.save_revision(
                        "replace", f"replica {rid} is {status}: replaced", terminated=[rid]
                    )

    def _replace_preempted(self, lost: list[int]) -> None:
        infra = {rid: r.infra for rid, r in self.replicas.items()}
        where = ", ".join(f"{rid} ({infra.get(rid) or '?'})" for rid in lost)
        # a replacement at once, not at the next decision tick
        self._decide(time.time(), f"replica(s) {where} preempted: replaced", tuple(lost))

    # -- what others read -----------------------------------------------------------------

    async def _publish(self) -> None:
        """The replica set to the load balancer, then the record `serve status` reads: a
        replica shown READY is one the LB already routes to (the LB's own watch of
        replicas.json lags by up to its poll interval, and a client that starts on READY
        would get 503s in that gap)."""
        views = self.views()
        active = set(active_versions(views, self.mode, self.min_replicas_of))
        statuses = {rid: r.facts.status() for rid, r in self.replicas.items()}
        versions = {rid: r.facts.version for rid, r in self.replicas.items()}
        chosen = routed(statuses, versions, active)
        ready = [
            ReplicaEntry(url=r.endpoint, replica_id=rid, version=r.facts.version)
            for rid, r in sorted(self.replicas.items())
            if rid in chosen and r.endpoint
        ]  # fmt: skip
        wanted = ReplicaSet(replicas=tuple(ready))
        current = self.folder / "replicas.json"
        data = json.dumps(wanted.model_dump(mode="json"), sort_keys=True)
        try:
            changed = current.read_text() != data
            if changed:
                write_json_atomic(current, wanted)
        except OSError as exc:
            log.error("cannot write the replica set (%s): shutting down", exc)
            self.stopping = True
            changed = False
        if changed:
            await self._hand_to_lb(data)
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
                is_spot=r.facts.is_spot,
                role=r.role,
                reason=r.reason,
                exit_code=r.exit_code,
                last_lines=list(r.last_lines),
                log_kept=r.log_kept,
            )
            for rid, r in sorted(self.replicas.items())
        ]
        self.record = self.record.model_copy(
            update={
                "replicas": records,
                "status": self._service_status(),
                "update_mode": self.mode,
                "active_versions": sorted(active),
            }
        )
        self._save()

    async def _hand_to_lb(self, data: str) -> None:
        """PUT the replica set on the LB's control port. The file stays the source the LB
        reads on (re)start and watches, so a PUT that fails only costs the watch's lag."""
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=LB_PUSH_TIMEOUT)
        try:
            async with self.http.put(self.lb_replicas_url, data=data, timeout=timeout) as resp:
                if resp.status != 200:
                    log.warning("the load balancer refused the replica set: %s", await resp.text())
        except Exception as exc:  # aiohttp's and asyncio's errors: the watch will catch up
            log.info("the load balancer did not take the replica set (%r)", exc)

    def _save(self) -> None:
        """Write the record (when it changed); a service removed from the store (`serve down
        --purge` from another home) is taken down."""
        try:
            kept = state.write_record(self.record)
        except SkyformError as exc:  # the store refused or is away: tried again next loop
            log.warning("cannot write the service record: %s", exc.message)
            return
        if not kept and not self.stopping:
            log.error("the service is gone from the state store: shutting down")
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
            self.teardown_replica(rid, scale_down=True)
        while any(r.busy or r.probing for r in self.replicas.values()):
            await asyncio.sleep(0.2)  # probes out end too: the HTTP session closes next
        if self.lb is not None:
            self.lb.terminate()
            try:
                self.lb.wait(LB_STOP_SECONDS)
            except subprocess.TimeoutExpired:  # a request still waits on a replica that
                self.lb.kill()  # is gone (its node went silent): none can answer it now
                self.lb.wait()
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
