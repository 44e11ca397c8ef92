"""A failed probe asks the replica's engine whether its cluster is gone; through the real
engine that is a refresh of the replica's stack, seconds long (5-10 s for a Kubernetes stack
on a loaded machine). The probes do not wait for it: a READY replica that stops answering
leaves the load balancer at once, and a starting replica whose app comes up meanwhile is
READY at its next probe. The engine's answer still decides a preemption.

The controller's probing is driven here as its loop drives it (`take_lost`, `probe_all` every
tick) with real HTTP replicas on loopback; the engine is a check that takes ENGINE_SECONDS to
answer."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import aiohttp
from aiohttp import web

from skyform.serve import replica_io
from skyform.serve.controller_base import Replica
from skyform.serve.replica_io import ReplicaIO
from skyform.serve.replicas import ReplicaFacts, ReplicaStatus
from skyform.serve.state import ServiceRecord
from skyform.spec.service_models import ReadinessProbe

ENGINE_SECONDS = 2.0
TICK = 0.1
S = ReplicaStatus


class Probing(ReplicaIO):
    """The controller's replica I/O with what its probing reads."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        probe = ReadinessProbe(path="/health", initial_delay_seconds=60, timeout_seconds=1)
        self.versions = {1: SimpleNamespace(spec=SimpleNamespace(readiness_probe=probe),
                                            placer=None)}  # type: ignore[dict-item]  # fmt: skip
        self.record = ServiceRecord(name="web", task_path="web.yaml")
        self.replicas, self.tasks, self.lost = {}, set(), []
        self.ready_versions = set()
        self.http = http

    def add(self, rid: int, port: int, *, ready: bool) -> Replica:
        facts = ReplicaFacts(rid).launching().launched(True)
        if ready:
            facts = facts.probed(True, time.time(), 60)
        replica = Replica(facts, cluster=f"web-{rid}", endpoint=f"http://127.0.0.1:{port}")
        self.replicas[rid] = replica
        return replica


async def _app(port: int) -> web.AppRunner:
    app = web.Application()

    async def health(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app.router.add_get("/health", health)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _until(check, timeout: float) -> float:
    """Seconds until `check()` held (probing every TICK, as the controller's loop does)."""
    began = time.monotonic()
    while not check():
        assert time.monotonic() - began < timeout
        await asyncio.sleep(TICK)
    return time.monotonic() - began


def test_probes_judge_at_once_while_the_engine_is_asked(monkeypatch):
    asked: list[tuple[str, float]] = []
    torn_down: list[str] = []
    gone = {"web-1": "the pod is gone"}
    engine_busy = threading.Lock()

    def cluster_lost(cluster: str) -> str | None:
        asked.append((cluster, time.monotonic()))
        time.sleep(ENGINE_SECONDS)
        with engine_busy:
            return gone.get(cluster)

    def teardown(cluster: str, log) -> bool:
        # never while the same cluster's engine check runs: they would meet on its lock
        assert not engine_busy.locked()
        torn_down.append(cluster)
        return True

    monkeypatch.setattr(replica_io, "cluster_lost", cluster_lost)

    async def scenario() -> None:
        ports = _free_port(), _free_port()
        first = await _app(ports[0])
        async with aiohttp.ClientSession() as http:
            ctl = Probing(http)
            # the clusters' teardown as the controller is handed it (serve/clusters.py); the
            # replicas' jobs still run (no job has ended)
            ctl.clusters = SimpleNamespace(teardown=teardown, last_job=lambda cluster: None)  # type: ignore[assignment]
            serving = ctl.add(1, ports[0], ready=True)
            starting = ctl.add(2, ports[1], ready=False)  # its app does not listen yet

            taken: list[int] = []

            async def ticking(stop: asyncio.Event) -> None:
                while not stop.is_set():
                    taken.extend(ctl.take_lost())
                    ctl.probe_all(time.time())
                    await asyncio.sleep(TICK)

            stop = asyncio.Event()
            loop = asyncio.create_task(ticking(stop))
            await _until(lambda: any(c == "web-2" for c, _ in asked), 5)
            await first.cleanup()  # replica 1's pod is deleted: nothing answers there
            asked_at = time.monotonic()
            second = await _app(ports[1])  # replica 2's app is up, its engine check still out

            # replica 2 is READY at its next probe, not once its engine has answered
            ready_in = await _until(lambda: starting.facts.status() is S.READY, ENGINE_SECONDS)
            assert ready_in < ENGINE_SECONDS / 2
            # replica 1 leaves the load balancer at its first failed probe
            out_in = await _until(lambda: serving.facts.status() is not S.READY, ENGINE_SECONDS)
            assert out_in < ENGINE_SECONDS / 2 and serving.facts.status() is S.NOT_READY
            # the engine's answer decides: replica 1's cluster is gone, a preemption
            await _until(lambda: taken == [1], 3 * ENGINE_SECONDS)
            assert time.monotonic() - asked_at >= ENGINE_SECONDS
            assert serving.facts.preempted and serving.reason == "preempted: the pod is gone"
            await _until(lambda: torn_down == ["web-1"], 2)
            assert starting.facts.status() is S.READY and not starting.facts.preempted
            # one engine check at a time per replica, however many probes failed meanwhile
            assert sorted(c for c, _ in asked) == ["web-1", "web-2"]

            stop.set()
            await loop
            await _until(lambda: not any(r.probing for r in ctl.replicas.values()), 5)
            await second.cleanup()

    asyncio.run(scenario())


def _recorded_cluster(name: str) -> None:
    """What a finished apply records for a replica's Kubernetes cluster."""
    from skyform.plan.model import ClusterSpec, PlacedOffer
    from skyform.state.db import open_state
    from skyform.state.models import ClusterHandle, ClusterRecord, ClusterStatus, NodeHandle

    offer = PlacedOffer(cloud="kubernetes", region="test", zone=None, instance_type="1CPU--2GB",
                        spot=False, hourly_price=0.0, vcpus=1, memory_gib=2)  # fmt: skip
    node = NodeHandle(rank=0, host="127.0.0.1", ip="10.244.1.2", node_id="ns/web-1-0")
    handle = ClusterHandle(name=name, engine="pulumi", infra=offer.infra, offer=offer,
                           nodes=[node], stack=f"skyform/{name}")  # fmt: skip
    spec = ClusterSpec(name=name, offer=offer, num_nodes=1)
    db = open_state()
    try:
        db.put_cluster(ClusterRecord(name=name, status=ClusterStatus.UP, spec=spec,
                                     handle=handle, hourly_price=0.0, launched_at=1.0))  # fmt: skip
    finally:
        db.close()


def test_an_engine_that_cannot_answer_is_no_verdict(monkeypatch):
    """A preempted replica's process has ended (the preemption killed it). While its engine
    fails to answer (a locked stack, an API server busy) that is no verdict: the replica is
    not FAILED for its process's end, and it is a preemption once the engine answers."""
    from skyform.errors import StackError
    from skyform.recovery import detect
    from skyform.state.models import JobRecord, JobStatus

    _recorded_cluster("web-1")
    refreshes: list[str] = []

    def lost_nodes(engine, handle) -> list[str]:  # the engine's refresh of the stack
        refreshes.append(handle.name)
        if len(refreshes) == 1:
            raise StackError("the stack skyform/web-1 is locked by another update")
        return ["node 0 (the pod is gone)"]

    monkeypatch.setattr(detect, "lost_nodes", lost_nodes)
    ended = JobRecord(cluster="web-1", job_id=1, name="web", task_id="t", submitted_at=1.0,
                      status=JobStatus.FAILED, exit_codes={0: 137})  # fmt: skip

    async def scenario() -> None:
        async with aiohttp.ClientSession() as http:
            ctl = Probing(http)
            ctl.clusters = SimpleNamespace(teardown=lambda cluster, log: True,  # type: ignore[assignment]
                                           last_job=lambda cluster: ended)  # fmt: skip
            replica = ctl.add(1, _free_port(), ready=True)  # nothing listens: probes fail
            taken: list[int] = []
            for _ in range(100):
                taken.extend(ctl.take_lost())
                ctl.probe_all(time.time())
                await asyncio.sleep(TICK)
                assert replica.facts.status() is not S.FAILED, replica.reason
                if taken:
                    break
            assert taken == [1] and len(refreshes) >= 2
            assert replica.facts.preempted
            assert replica.reason == "preempted: node 0 (the pod is gone)"
            await _until(lambda: not replica.probing, 5)

    asyncio.run(scenario())
