"""The controller's replica I/O: launch (planned, then brought up as managed jobs' clusters
are), probe, drain, tear down, and tell a preemption (the engine reports the replica's node
dead) from a replica that stopped answering. Decisions come from the pure modules; this
only carries them out."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from skyform.errors import ConfigError, SkyformError, SpecError, UnsafePathError
from skyform.serve import sandbox
from skyform.serve.controller_base import ControllerBase, Replica, interval, log
from skyform.serve.probe import probe, probe_request
from skyform.serve.replica_launch import (
    ReplicaInputs,
    cluster_lost,
    hands_out_hosts,
    write_replica_task,
)
from skyform.serve.replica_logs import (
    KEPT_LOG_LINES,
    drop_kept_log,
    job_end,
    keep_log,
    kept_log_path,
    last_lines,
)
from skyform.serve.replicas import (
    DRAIN_SECONDS,
    FAILED_STATUSES,
    LAUNCH_RETRY_GAP_SECONDS,
    LAUNCH_TRIES,
    ReplicaFacts,
    ReplicaStatus,
    Step,
    kept_after_teardown,
    launch_retry_gap,
)
from skyform.spec.service_models import ReadinessProbe

LAUNCHES_AT_ONCE = 4
# what waiting cannot fix (SkyPilot's InvalidClusterName, NoCloudAccess, ResourcesMismatch)
NOT_RETRIED = (SpecError, ConfigError, UnsafePathError)


class _Interrupted(Exception):
    """The replica was scaled down (or the service is stopping) between launch tries."""


class ReplicaIO(ControllerBase):
    slots: asyncio.Semaphore
    next_id: int
    lost: list[int]  # replicas found preempted, for the controller to take (take_lost)
    drain_seconds: float = DRAIN_SECONDS

    def new_replica(self, version: int, role: str, placement: dict[str, str] | None) -> int:
        rid, self.next_id = self.next_id, self.next_id + 1
        spot = role == "spot"
        self.replicas[rid] = Replica(
            ReplicaFacts(rid, version, is_spot=spot),
            role=role,
            location=(placement or {}).get("infra"),
        )
        self.background(self._launch(rid, placement))
        return rid

    async def _launch(self, rid: int, placement: dict[str, str] | None) -> None:
        replica = self.replicas[rid]
        replica.busy = True
        async with self.slots:
            if replica.facts.down is not None:
                return  # scaled down while waiting for a slot: its teardown owns `busy`
            if self.stopping:
                replica.busy = False
                return
            replica.facts = replica.facts.launching()
            version = self.versions[replica.facts.version]
            try:
                task, replica.cluster = await asyncio.to_thread(
                    write_replica_task, version.inputs, rid, None, placement
                )
                where = await asyncio.to_thread(
                    self.clusters.planned_infra, version.inputs, task, replica.cluster
                )
                if where == "local":  # replicas on this machine: one network namespace each
                    replica.box = await asyncio.to_thread(sandbox.create)
                    task, _ = await asyncio.to_thread(
                        write_replica_task, version.inputs, rid, replica.box, placement
                    )
                port = version.spec.ports
                replica.infra, address = await self._launch_tries(
                    replica, version.inputs, task, port=port, where=where
                )
                if replica.box is not None:
                    address = f"{replica.box.address}:{port}"
                replica.endpoint = f"http://{address}"
                replica.launched_at = time.time()
                replica.facts = replica.facts.launched(True)
                self._placed(replica, ok=True)
                log.info("replica %d launched at %s", rid, replica.endpoint)
            except _Interrupted:
                return  # scaled down or stopping between tries: its teardown has it now
            except Exception as exc:  # any launch failure is FAILED_PROVISION, not a crash
                replica.reason = exc.message if isinstance(exc, SkyformError) else repr(exc)
                log.warning("replica %d failed to launch: %s", rid, replica.reason)
                replica.facts = replica.facts.launched(False, fatal=isinstance(exc, NOT_RETRIED))
                self._placed(replica, ok=False)  # SkyPilot: a failed spot launch is a preemption
            finally:
                if replica.facts.down is None:  # else its teardown owns `busy`
                    replica.busy = False

    async def _launch_tries(
        self, replica: Replica, inputs: ReplicaInputs, task: Path, *, port: int, where: str
    ) -> tuple[str, str]:
        """launch(), tried again after a failure as SkyPilot does (3 tries, 60 s then 120 s
        apart; the failed try's cluster torn down first). A task or config that cannot work
        is not tried again; a replica scaled down meanwhile stops trying (_Interrupted)."""
        rid = replica.facts.replica_id
        first_gap = interval("SKYFORM_SERVE_LAUNCH_RETRY_GAP", LAUNCH_RETRY_GAP_SECONDS)
        failed = 0
        while True:
            try:
                return await asyncio.to_thread(
                    self.clusters.launch, inputs, task, replica.cluster, log.info,
                    port=port, reason=f"service {self.name} {replica.launched_by}".rstrip(),
                    one_at_a_time=hands_out_hosts(where),
                )  # fmt: skip
            except Exception as exc:
                failed += 1
                gap = launch_retry_gap(failed, first_gap)
                if gap is None or isinstance(exc, NOT_RETRIED):
                    raise
                why = exc.message if isinstance(exc, SkyformError) else repr(exc)
                log.warning(
                    "replica %d: launch try %d of %d failed (%s); trying again in %gs",
                    rid, failed, LAUNCH_TRIES, why, gap,
                )  # fmt: skip
            await asyncio.to_thread(self.clusters.teardown, replica.cluster, log.info)
            deadline = time.monotonic() + gap
            while time.monotonic() < deadline:
                if replica.facts.down is not None or self.stopping:
                    raise _Interrupted()
                await asyncio.sleep(min(0.5, max(0.0, deadline - time.monotonic())))

    def teardown_replica(self, rid: int, *, scale_down: bool, preempted: bool = False) -> None:
        """Scale-downs drain (the LB stops sending, in-flight requests finish, up to 120 s);
        failures and preemptions go at once, as in SkyPilot."""
        replica = self.replicas[rid]
        if replica.facts.down is not None:
            return
        status = replica.facts.status()
        ran = replica.facts.launch is Step.SUCCEEDED
        replica.facts = replica.facts.tearing_down(scale_down=scale_down, preempted=preempted)
        replica.busy = True
        drain = scale_down and status is ReplicaStatus.READY and not preempted
        # a failed replica whose job ran: its log is kept (a failed launch ran none; a
        # teardown tried again has it kept already)
        keep = ran and status in FAILED_STATUSES and not replica.log_kept
        self.background(self._down(rid, drain, keep=keep))

    async def _down(self, rid: int, drain: bool, keep: bool) -> None:
        """Tear the replica's cluster down; a failed replica's log is kept first (its
        record stays listed, and `serve logs` reads the copy once the cluster is gone)."""
        replica = self.replicas[rid]
        if replica.engine_check is not None:  # its refresh would meet this destroy on the
            await asyncio.wait([replica.engine_check])  # stack's lock
        if drain and replica.endpoint:
            await self._drained(replica.endpoint)
        ok = True
        if keep and replica.cluster:
            await self._keep_log(rid, replica)
        if replica.cluster:
            ok = await asyncio.to_thread(self.clusters.teardown, replica.cluster, log.info)
        if replica.box is not None:
            await asyncio.to_thread(sandbox.destroy, replica.box)
        replica.facts = replica.facts.torn_down(ok)
        replica.busy = False
        kept = kept_after_teardown(replica.facts, self.record.version, self.record.rolled_back)
        if not kept and ok:
            self.forget(rid)

    def forget(self, rid: int) -> None:
        """The replica's record goes, and its kept log with it."""
        del self.replicas[rid]
        drop_kept_log(self.folder, rid)

    async def _keep_log(self, rid: int, replica: Replica) -> None:
        path = kept_log_path(self.folder, rid)
        try:
            secrets = self.versions[replica.facts.version].secret_values
            lines = await asyncio.to_thread(self.clusters.log_tail, replica.cluster, KEPT_LOG_LINES)
            kept = await asyncio.to_thread(keep_log, lines, replica.cluster, path, secrets)
        except OSError as exc:  # the service folder is going: the teardown goes on
            log.warning("replica %d: its log could not be kept: %s", rid, exc)
            return
        if kept:
            replica.log_kept = True
            replica.last_lines = tuple(await asyncio.to_thread(last_lines, path))
            log.info("replica %d: its log is kept in %s", rid, path.name)

    async def _drained(self, url: str) -> None:
        """Wait until the load balancer neither routes to `url` nor has a request on it."""
        deadline = time.monotonic() + interval("SKYFORM_SERVE_DRAIN_SECONDS", self.drain_seconds)
        while time.monotonic() < deadline:
            try:
                async with self.http.get(self.lb_replicas_url) as resp:
                    view = await resp.json()
                listed = {e["url"] for key in ("ready", "draining") for e in view.get(key, [])}
                if url not in listed:
                    return
            except Exception as exc:  # the LB is gone: nothing can reach the replica
                log.info("drain of %s: load balancer not answering (%r)", url, exc)
                return
            await asyncio.sleep(0.1)
        log.warning("drain of %s: requests still in flight after the drain time", url)

    def probe_all(self, now: float) -> None:
        """Start a probe of every launched replica that has none in flight. Each goes on by
        itself (`_probe`), so a replica whose engine is being asked about it holds up no
        other replica's probes, nor its own next ones."""
        for rid, replica in self.replicas.items():
            idle = not replica.busy and not replica.probing and rid not in self.lost
            if replica.facts.probed_now() and replica.endpoint and idle:
                replica.probing = True
                self.background(self._probe(rid, replica, now))

    async def _probe(self, rid: int, replica: Replica, now: float) -> None:
        """One probe. A failed one asks the replica's engine whether its cluster is gone (a
        preemption: replaced at once), as SkyPilot asks the cloud. Through the real engine
        that is a refresh of the replica's stack, seconds long: the failure counts at once (a
        READY replica leaves the load balancer now, not once the engine has answered) and the
        engine answers in the background; only a failure that would end the replica (its
        initial delay or failure window run out) waits for the answer, so that a preemption
        is not taken for the replica's own failure."""
        try:
            spec = self._probe_spec(replica)
            ok = await probe(self.http, probe_request(spec, replica.endpoint or ""))
            if self.replicas.get(rid) is not replica or not replica.facts.probed_now():
                return  # torn down or preempted while the probe was out: its engine is busy
            if not ok and replica.cluster:
                check = self._engine_check(rid, replica)
                ends = replica.facts.probed(False, now, spec.initial_delay_seconds)
                if ends.needs_teardown() and await check is not None:
                    return  # preempted: the controller takes it (take_lost)
            self._record_probe(rid, replica, ok, now)
        finally:
            replica.probing = False

    def _engine_check(self, rid: int, replica: Replica) -> asyncio.Task[str | None]:
        """The engine's answer on the replica's cluster: the one being sought, or a new ask."""
        if replica.engine_check is None or replica.engine_check.done():
            replica.engine_check = asyncio.create_task(self._ask_engine(rid, replica))
        return replica.engine_check

    async def _ask_engine(self, rid: int, replica: Replica) -> str | None:
        """Why the replica's cluster is gone, or None; a gone one is listed in `lost` for
        the controller (take_lost)."""
        try:
            why = await asyncio.to_thread(cluster_lost, replica.cluster)
        except Exception as exc:  # the engine's check broke: the probes go on judging
            log.warning("replica %d: asking its engine failed: %r", rid, exc)
            return None
        current = self.replicas.get(rid) is replica and replica.facts.down is None
        if why is not None and current and rid not in self.lost:
            replica.reason = f"preempted: {why}"
            log.warning("replica %d (%s) is preempted: %s", rid, replica.infra, why)
            self.lost.append(rid)
        if why is None and current:
            await self._exited(rid, replica)
        return why

    async def _exited(self, rid: int, replica: Replica) -> None:
        """A replica whose cluster is there but whose process has ended is FAILED now, not
        after its readiness probe's whole initial delay."""
        ended = job_end(await asyncio.to_thread(self.clusters.last_job, replica.cluster))
        if ended is None or self.replicas.get(rid) is not replica:
            return
        if replica.facts.probed_now():
            replica.reason = ended.describe()
            replica.exit_code = ended.exit_code
            log.warning("replica %d: %s", rid, replica.reason)
            replica.facts = replica.facts.app_failed()

    def take_lost(self) -> list[int]:
        """The replicas found preempted, torn down now (no drain, as SkyPilot), for the
        controller to replace in the same step: a replacement is planned while the lost
        replica still holds what it had (on an ssh pool, the dead host is not handed out)."""
        lost, self.lost = self.lost, []
        taken = []
        for rid in lost:
            replica = self.replicas.get(rid)
            if replica is not None and replica.facts.down is None:
                self.teardown_replica(rid, scale_down=True, preempted=True)
                self._placed(replica, ok=False)
                taken.append(rid)
        return taken

    def _record_probe(self, rid: int, replica: Replica, ok: bool, now: float) -> None:
        if self.replicas.get(rid) is not replica or not replica.facts.probed_now():
            return  # torn down or preempted while the engine was asked
        before = replica.facts.status()
        spec = self._probe_spec(replica)
        replica.facts = replica.facts.probed(ok, now, spec.initial_delay_seconds)
        after = replica.facts.status()
        if after is not before:
            log.info("replica %d: %s -> %s", rid, before.value, after.value)
        if after is ReplicaStatus.READY:
            self.ready_versions.add(replica.facts.version)
            if self.record.ready_since is None:
                self.record = self.record.model_copy(update={"ready_since": now})

    def _placed(self, replica: Replica, *, ok: bool) -> None:
        """Tell the version's spot placer how its choice went."""
        placer = self.versions[replica.facts.version].placer
        if placer is None or replica.location is None:
            return
        if ok:
            placer.launched(replica.location)
        else:
            placer.preempted(replica.location)

    def _probe_spec(self, replica: Replica) -> ReadinessProbe:
        """Each replica is probed with its own version's probe (SkyPilot: per version)."""
        return self.versions[replica.facts.version].spec.readiness_probe
