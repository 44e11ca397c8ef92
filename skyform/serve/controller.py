"""The service controller: one detached process per service (its entry point is
`python -m skyform.ops.serve.controller NAME`, which hands it skyform's verbs for the
replicas' clusters), as managed jobs have theirs.

It starts the load balancer, launches replicas as managed jobs' clusters are launched (each in
its own network namespace on `local`), probes them, keeps the LB's replica set to the READY replicas
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
import json
import os
import signal
import time
from collections.abc import Callable
from typing import Any, TypeVar

from skyform.controllers.lease import LEAVE
from skyform.errors import SkyformError
from skyform.serve import control, lb_process, revisions, sealed, state
from skyform.serve.adoption import was_driven
from skyform.serve.autoscaler import Autoscaler, Launch
from skyform.serve.clusters import ReplicaClusters
from skyform.serve.controller_base import Version, interval, log, spot_placement
from skyform.serve.lb.config import ReplicaEntry, ReplicaSet, write_json_atomic
from skyform.serve.lbstats import LbStats
from skyform.serve.replica_io import LAUNCHES_AT_ONCE
from skyform.serve.replicas import ReplicaStatus, Step, routed
from skyform.serve.rollout import Rollouts
from skyform.serve.updates import active_versions
from skyform.state import fencing
from skyform.state.db import StateDB

T = TypeVar("T")
LB_PUSH_TIMEOUT = 2.0  # seconds; the LB answers a PUT at once unless it is wedged
PRESENCE_CHECK_SECONDS = 5.0  # how often the controller checks its service is still there


class ServiceController(Rollouts):
    def __init__(self, name: str, clusters: ReplicaClusters, db: StateDB | None = None) -> None:
        self.name = name
        self.clusters = clusters
        self.db = db  # where this controller's lease is fenced (None: not checked)
        self.folder = state.service_dir(name)
        self.record = state.require(name)
        self.adopting = was_driven(self.record)
        given = os.environ.pop("SKYFORM_SERVE_SECRETS", None)
        self.versions: dict[int, Version] = {}
        self.load_versions(json.loads(given or "{}") if given is not None else None)
        self.autoscaler = Autoscaler(self.latest.spec.replica_policy)
        self.replicas = {}
        self.next_id = 1
        self.revision = 0
        self.stopping = False
        self.pushed = False  # the replica set reached the load balancer once
        self.probe_every = interval("SKYFORM_SERVE_PROBE_INTERVAL", 10.0)
        self.autoscaler.interval = interval("SKYFORM_SERVE_DECISION_INTERVAL", 20.0)
        self.slots = asyncio.Semaphore(LAUNCHES_AT_ONCE)
        self.tasks: set[asyncio.Task[None]] = set()
        self.lost: list[int] = []
        self.ready_versions: set[int] = set()
        self.rollout = None
        self.halted = False
        self.leaving = False
        self.http: Any = None

    # -- main loop ------------------------------------------------------------------------

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._stop)
        loop.add_signal_handler(LEAVE, self._leave)
        self.request_key = control.make_key(self.name)
        state.claim(self.name)  # this home and machine run it now (logs, same-home keys)
        if self.adopting:
            self.rebuild()
        self._start_lb()
        import aiohttp

        next_probe = next_decision = next_request = next_presence = 0.0
        async with aiohttp.ClientSession() as http:
            self.http = http
            self.stats = LbStats(self.name)
            while not self.stopping:
                now = time.time()
                if now >= next_request:  # serve update / down from any home (control.py)
                    next_request = now + control.REQUEST_POLL_SECONDS
                    self._in_store(self.answer_requests)
                if now >= next_presence:  # `serve down --purge` from another home
                    next_presence = now + PRESENCE_CHECK_SECONDS
                    if self._in_store(lambda: state.store().exists(self.name)) is False:
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
            if not self.leaving:
                await self._shutdown()

    def _in_store(self, work: Callable[[], T]) -> T | None:
        """The store's work of one loop; a store away (beyond its reconnect window) costs
        that loop's requests or presence check, never the replicas being served."""
        try:
            return work()
        except SkyformError as exc:
            log.warning("the state store did not answer: %s", exc.message)
            return None

    def _stop(self) -> None:
        self.stopping = True

    def _leave(self) -> None:
        """The controller service that started this one is gone or stopping: stop driving
        the service, tearing nothing down (another controller adopts it)."""
        log.info("leaving service %s to the next controller", self.name)
        self.leaving = self.stopping = True

    def _task_relative(self, path: str) -> str:
        """TLS files as the task file names them: `~` expanded, relative paths from where
        `serve up` / `serve update` ran, like the replicas' workdir and mounts."""
        from pathlib import Path

        return str(self.latest.inputs.paths_start() / Path(path).expanduser())

    def _start_lb(self) -> None:
        spec = self.latest.spec
        tls = None
        if spec.tls:
            tls = (self._task_relative(spec.tls.keyfile), self._task_relative(spec.tls.certfile))
        self.take_lb(self.lb_config(self.folder, tls))
        update: dict[str, Any] = {"controller_pid": os.getpid()}
        if not self.adopting:
            update["status"] = state.ServiceStatus.REPLICA_INIT
        self.record = self.record.model_copy(update=update)
        self._save()

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
        if changed or not self.pushed:
            self.pushed = await self._hand_to_lb(data) or self.pushed
            if self.pushed and self.adopting:
                self._took_over()
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

    async def _hand_to_lb(self, data: str) -> bool:
        """PUT the replica set on the LB's control port. The file stays the source the LB
        reads on (re)start and watches, so a PUT that fails only costs the watch's lag."""
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=LB_PUSH_TIMEOUT)
        try:
            async with self.http.put(self.lb_replicas_url, data=data, timeout=timeout) as resp:
                if resp.status != 200:
                    log.warning("the load balancer refused the replica set: %s", await resp.text())
                return resp.status == 200
        except Exception as exc:  # aiohttp's and asyncio's errors: the watch will catch up
            log.info("the load balancer did not take the replica set (%r)", exc)
            return False

    def _took_over(self) -> None:
        """Adopted: the load balancer routes by this controller's replica set now."""
        self.adopting = False
        if self.db is not None:
            self.db.add_event(
                "serve.took_over",
                f"controller pid {os.getpid()} drives service {self.name}",
                data={"service": self.name, "pid": os.getpid()},
            )

    def _save(self) -> None:
        """Write the record (when it changed), if this controller still holds the service's
        lease: every write of this process is fenced (state/fencing.py), so a controller
        whose lease was taken anew gets errors.Fenced and stops; a service removed from the
        store (`serve down --purge` from another home) is taken down."""
        fencing.raise_if_lost()  # its renewer saw the lease go, even with nothing to write
        try:
            kept = state.write_record(self.record)
        except SkyformError as exc:  # the store refused or is away: tried again next loop
            log.warning("cannot write the service record: %s", exc.message)
            return
        if not kept and not self.stopping:
            log.error("the service is gone from the state store: shutting down")
            self.stopping = True

    def _service_status(self) -> state.ServiceStatus:
        if self.stopping:
            return state.ServiceStatus.SHUTTING_DOWN
        statuses = [r.facts.status() for r in self.replicas.values()]
        if ReplicaStatus.READY in statuses:
            return state.ServiceStatus.READY
        if any(s in (ReplicaStatus.PENDING, ReplicaStatus.PROVISIONING, ReplicaStatus.STARTING)
               for s in statuses):  # fmt: skip
            return state.ServiceStatus.REPLICA_INIT
        if any(s.value.startswith("FAILED") for s in statuses):
            return state.ServiceStatus.FAILED
        return state.ServiceStatus.NO_REPLICA

    async def _shutdown(self) -> None:
        log.info("shutting down")
        self.record = self.record.model_copy(update={"status": state.ServiceStatus.SHUTTING_DOWN})
        self._save()
        with contextlib.suppress(OSError):
            write_json_atomic(self.folder / "replicas.json", ReplicaSet())
        while any(r.busy and r.facts.launch is Step.RUNNING for r in self.replicas.values()):
            await asyncio.sleep(0.2)  # a launch in flight finishes, then goes down with the rest
        for rid in list(self.replicas):
            self.teardown_replica(rid, scale_down=True)
        while any(r.busy or r.probing for r in self.replicas.values()):
            await asyncio.sleep(0.2)  # probes out end too: the HTTP session closes next
        if self.record.lb_pid is not None:  # a request may still wait on a replica that is
            await asyncio.to_thread(lb_process.stop, self.record.lb_pid)  # gone: killed then
        failed = [r.cluster for r in self.replicas.values() if r.facts.down is Step.FAILED]
        if failed:
            self.record = self.record.model_copy(
                update={
                    "status": state.ServiceStatus.FAILED_CLEANUP,
                    "reason": f"left: {', '.join(failed)}",
                }
            )
            self._save()
            return
        if self.db is not None:
            sealed.forget(self.db, self.name)
        state.remove(self.name)
