"""Worker processes: the public port served by several processes at once (SO_REUSEPORT:
the kernel spreads new connections over them), so the balancer uses every core.

The first process (the one the controller starts) keeps the control port, the replica set
and the request log, and serves clients too. Each other worker is forked from it before any
event loop runs, with a socket pair to it: the first process sends each replica set down as
a JSON line; a worker sends up, every REPORT_SECONDS and whenever asked (a `/metrics` or
`/-/replicas` read asks all of them first, so what those show is exact), what it counted
since its last report and what it has in flight. One number is counted in one process only,
so the sums are exact.

Each worker applies the policy to the requests it holds (as nginx's workers do without a
shared zone): round robin cycles per worker, least load sees that worker's in-flight ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
from dataclasses import dataclass, field
from typing import Any

from skyform.serve.lb.config import LbConfig, ReplicaSet
from skyform.serve.lb.frontend import tls_context
from skyform.serve.lb.idle import IdleClients, close_idle_clients
from skyform.serve.lb.metrics import Metrics
from skyform.serve.lb.proxy import SHUTDOWN_SECONDS, Proxy

REPORT_SECONDS = 0.05
ASK_TIMEOUT_SECONDS = 1.0
STOP_SECONDS = SHUTDOWN_SECONDS + 5
log = logging.getLogger("skyform.serve.lb")


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP listener that other processes of this user may bind too (SO_REUSEPORT)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


@dataclass
class Worker:
    """The first process's view of one forked worker."""

    index: int
    pid: int
    channel: socket.socket
    writer: asyncio.StreamWriter | None = None
    inflight: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    asked: int = 0  # reports asked for, and answered (in order: the channel is a stream)
    answers: int = 0
    gone: bool = False
    answered: asyncio.Event = field(default_factory=asyncio.Event)

    async def answer(self, number: int) -> None:
        """Until the `number`th report asked for has arrived (or the worker is gone)."""
        while self.answers < number and not self.gone:
            self.answered.clear()
            await self.answered.wait()


def fork_workers(config: LbConfig, count: int, listener: socket.socket) -> list[Worker]:
    """Fork `count` workers serving `listener`'s port. Call before any event loop runs;
    a worker never returns from here (it exits when its work is over)."""
    port = int(listener.getsockname()[1])
    workers: list[Worker] = []
    for index in range(1, count + 1):
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            _die_with_parent()
            ours.close()
            listener.close()
            for other in workers:
                other.channel.close()
            code = 1
            try:
                code = asyncio.run(_worker_main(config, port, theirs))
            finally:
                os._exit(code)
        theirs.close()
        workers.append(Worker(index, pid, ours))
    return workers


class WorkerGroup:
    """The first process's side: replica sets down, reports up, folded into its proxy."""

    def __init__(self, proxy: Proxy, workers: list[Worker]) -> None:
        self.proxy = proxy
        self.workers = workers
        self._readers: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        for worker in self.workers:
            reader, worker.writer = await asyncio.open_connection(sock=worker.channel)
            self._readers.append(asyncio.create_task(self._read(worker, reader)))
        self.proxy.remote_inflight = self._remote_inflight

    def send_replicas(self, replica_set: ReplicaSet) -> None:
        line = json.dumps({"replicas": replica_set.model_dump(mode="json")}).encode() + b"\n"
        for worker in self.workers:
            if worker.writer is not None:
                worker.writer.write(line)

    async def refresh(self) -> None:
        """Ask every worker for its report now and wait (a second at most) for them."""
        waits = []
        for worker in self.workers:
            if worker.writer is not None and not worker.gone:
                worker.asked += 1
                worker.writer.write(b'{"report": true}\n')
                waits.append(worker.answer(worker.asked))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*waits), ASK_TIMEOUT_SECONDS)

    def requests_by_worker(self) -> dict[int, int]:
        own = self.proxy.metrics.total() - sum(w.requests for w in self.workers)
        return {0: own, **{w.index: w.requests for w in self.workers}}

    def terminate(self) -> None:
        """Tell the workers to stop: they take no new client and finish what they hold."""
        for worker in self.workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGTERM)

    async def stop(self) -> None:
        """Wait for the workers `terminate` stopped, and their last reports."""
        # their last reports arrive before their channels close
        if self._readers:
            _done, late = await asyncio.wait(self._readers, timeout=STOP_SECONDS)
            for task in late:
                task.cancel()
        loop = asyncio.get_running_loop()
        for worker in self.workers:
            await loop.run_in_executor(None, _reap, worker.pid)
            if worker.writer is not None:
                worker.writer.close()

    def _remote_inflight(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for worker in self.workers:
            for url, n in worker.inflight.items():
                out[url] = out.get(url, 0) + n
        return out

    async def _read(self, worker: Worker, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            report = json.loads(line)
            worker.requests += self.proxy.metrics.merge(report["metrics"])
            for second, n in report["seconds"].items():
                pending = self.proxy.requests.pending
                pending[int(second)] = pending.get(int(second), 0) + n
            worker.inflight = report["inflight"]
            self.proxy.prune_draining()
            if report.get("answer"):
                worker.answers += 1
                worker.answered.set()
        log.info("worker %d (pid %d) has stopped", worker.index, worker.pid)
        worker.inflight = {}
        worker.gone = True
        worker.answered.set()


def _die_with_parent() -> None:
    """SIGKILL this worker when the first process dies (Linux's PR_SET_PDEATHSIG), so a
    load balancer killed for good (`kill -9`, its controller's last resort) leaves no
    worker behind holding the port."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


async def _worker_main(config: LbConfig, port: int, channel: socket.socket) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    idle: IdleClients[Any] = IdleClients(
        config.header_timeout_seconds, config.keepalive_timeout_seconds
    )
    proxy = Proxy(config.model_copy(update={"request_log": None}), idle)
    await proxy.start()
    server = await loop.create_server(
        proxy.connection, sock=listening_socket(config.host, port), ssl=tls_context(config)
    )
    reader, writer = await asyncio.open_connection(sock=channel)
    tasks = [
        asyncio.create_task(close_idle_clients(idle, proxy.connections)),
        asyncio.create_task(_report_often(proxy, writer)),
        asyncio.create_task(_obey(proxy, reader, writer, stop)),
    ]
    await stop.wait()
    server.close()
    await proxy.finish_requests()
    for task in tasks:
        task.cancel()
    _report(proxy, writer)
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    await proxy.close()
    return 0


async def _obey(
    proxy: Proxy, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stop: asyncio.Event
) -> None:
    while line := await reader.readline():
        message = json.loads(line)
        if "replicas" in message:
            proxy.set_replicas(ReplicaSet.model_validate(message["replicas"]))
        else:
            _report(proxy, writer, answer=True)
    stop.set()  # the first process is gone


async def _report_often(proxy: Proxy, writer: asyncio.StreamWriter) -> None:
    sent_inflight: dict[str, int] = {}
    while True:
        await asyncio.sleep(REPORT_SECONDS)
        if proxy.metrics.total() or proxy.requests.pending or proxy.inflight != sent_inflight:
            sent_inflight = dict(proxy.inflight)
            _report(proxy, writer)


def _report(proxy: Proxy, writer: asyncio.StreamWriter, answer: bool = False) -> None:
    """What this worker counted since its last report (then forgotten here), and what it
    has in flight now."""
    metrics, proxy.metrics = proxy.metrics, Metrics()
    seconds, proxy.requests.pending = proxy.requests.pending, {}
    report = {
        "metrics": metrics.snapshot(),
        "seconds": seconds,
        "inflight": proxy.inflight,
        "answer": answer,  # to a request for it: the first process counts these
    }
    writer.write(json.dumps(report).encode() + b"\n")
