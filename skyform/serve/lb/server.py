"""Run the load balancer: the public listener (all paths proxied) and a control listener on
loopback (`/metrics`, `GET|PUT /-/replicas`, `/-/health`), so no replica path is shadowed.

`python -m skyform.serve.lb CONFIG.json` runs it until SIGTERM/SIGINT; with port 0 it binds
free ports and writes them to `ports_file`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import time
from pathlib import Path

from aiohttp import web

from skyform.errors import SkyformError
from skyform.serve.lb.config import LbConfig, ReplicaSet, load_replica_set, parse_replica_set
from skyform.serve.lb.frontend import ClientConnection, tls_context
from skyform.serve.lb.idle import IdleClients, close_idle_clients
from skyform.serve.lb.proxy import Proxy
from skyform.serve.lb.workers import REPORT_SECONDS, Worker, WorkerGroup

WATCH_INTERVAL_SECONDS = 0.25
FLUSH_INTERVAL_SECONDS = 1.0
log = logging.getLogger("skyform.serve.lb")


class LoadBalancer:
    def __init__(
        self,
        config: LbConfig,
        stop: asyncio.Event | None = None,
        listener: socket.socket | None = None,
        workers: list[Worker] | None = None,
    ) -> None:
        self.config = config
        self.listener = listener  # bound before the workers were forked (workers.py)
        self._forked = workers or []
        self.stop_event = stop
        self.idle: IdleClients[ClientConnection] = IdleClients(
            config.header_timeout_seconds, config.keepalive_timeout_seconds
        )
        self.proxy = Proxy(config, self.idle)
        self.workers = WorkerGroup(self.proxy, self._forked) if self._forked else None
        self.runners: list[web.AppRunner] = []
        self.server: asyncio.Server | None = None
        self.port = 0
        self.control_port = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._replicas_mtime: int | None = None

    async def start(self) -> None:
        await self.proxy.start()
        if self.workers is not None:
            await self.workers.start()
        self._reload_replicas()
        control = web.Application()
        control.router.add_get("/metrics", self._metrics)
        control.router.add_get("/-/replicas", self._get_replicas)
        control.router.add_put("/-/replicas", self._put_replicas)
        control.router.add_get("/-/health", self._health)
        loop = asyncio.get_running_loop()
        if self.listener is not None:
            self.server = await loop.create_server(
                self.proxy.connection, sock=self.listener, ssl=tls_context(self.config)
            )
        else:
            self.server = await loop.create_server(
                self.proxy.connection,
                self.config.host,
                self.config.port,
                ssl=tls_context(self.config),
                reuse_address=True,
            )
        self.port = int(self.server.sockets[0].getsockname()[1])
        self.control_port = await self._listen(
            control, self.config.control_host, self.config.control_port
        )
        self._tasks = [
            asyncio.create_task(self._watch_replicas()),
            asyncio.create_task(self._flush_requests()),
            asyncio.create_task(close_idle_clients(self.idle, self.proxy.connections)),
        ]
        if self.config.ports_file:
            Path(self.config.ports_file).write_text(
                json.dumps({"port": self.port, "control_port": self.control_port})
            )
        log.info("listening on %s:%d (control %d)", self.config.host, self.port, self.control_port)

    async def _listen(self, app: web.Application, host: str, port: int) -> int:
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_address=True)
        await site.start()
        self.runners.append(runner)
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        return int(sockets[0].getsockname()[1]) if sockets else port

    async def stop(self) -> None:
        """No new clients; the requests in flight (here and in the workers) finish first."""
        if self.server is not None:
            self.server.close()
        if self.workers is not None:
            self.workers.terminate()
        await self.proxy.finish_requests()
        if self.workers is not None:
            await self.workers.stop()
        for task in self._tasks:
            task.cancel()
        for runner in reversed(self.runners):
            await runner.cleanup()
        await self.proxy.close()

    def set_replicas(self, replica_set: ReplicaSet) -> None:
        self.proxy.set_replicas(replica_set)
        if self.workers is not None:
            self.workers.send_replicas(replica_set)

    # -- control endpoints ----------------------------------------------------------------

    async def _metrics(self, _request: web.Request) -> web.Response:
        by_worker = None
        if self.workers is not None:
            await self.workers.refresh()
            by_worker = self.workers.requests_by_worker()
        text = self.proxy.render_metrics(by_worker)
        return web.Response(text=text, content_type="text/plain", charset="utf-8")

    async def _get_replicas(self, _request: web.Request) -> web.Response:
        if self.workers is not None:
            await self.workers.refresh()
        return web.json_response(self.proxy.replica_view())

    async def _put_replicas(self, request: web.Request) -> web.Response:
        try:
            replica_set = parse_replica_set(await request.read())
        except SkyformError as exc:
            return web.json_response({"error": exc.message}, status=400)
        self.set_replicas(replica_set)
        if self.workers is not None:
            # a worker answers in order: once it reported, it routes by the new set
            await self.workers.refresh()
        return web.json_response(self.proxy.replica_view())

    async def _health(self, _request: web.Request) -> web.Response:
        return web.json_response({"ready": len(self.proxy.targets)})

    # -- background -----------------------------------------------------------------------

    def _reload_replicas(self) -> None:
        path = self.config.replicas_file
        if path is None:
            return
        try:
            mtime = os.stat(path).st_mtime_ns
        except FileNotFoundError:
            return
        if mtime == self._replicas_mtime:
            return
        self._replicas_mtime = mtime
        try:
            self.set_replicas(load_replica_set(path))
        except SkyformError as exc:
            log.warning("keeping the current replicas: %s", exc.message)

    async def _watch_replicas(self) -> None:
        while True:
            await asyncio.sleep(WATCH_INTERVAL_SECONDS)
            if self._orphaned():
                log.warning("the service's folder is gone (taken down, or its home removed): "
                            "stopping")  # fmt: skip
                if self.stop_event is not None:
                    self.stop_event.set()
                return
            self._reload_replicas()

    def _orphaned(self) -> bool:
        """The LB outlives its controller on purpose (a new one adopts it), but not its
        service: once the folder of its replica set is gone nobody can adopt it, and it
        would serve a stale set for ever."""
        path = self.config.replicas_file
        return path is not None and not os.path.isdir(os.path.dirname(path))

    async def _flush_requests(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_INTERVAL_SECONDS)
            try:
                # a worker's count of a second arrives up to a report later
                self.proxy.requests.flush(time.time() - (REPORT_SECONDS * 4 if self.workers else 0))
            except OSError as exc:
                log.warning("cannot write the request log: %s", exc)


async def serve_forever(
    config: LbConfig, listener: socket.socket | None = None, workers: list[Worker] | None = None
) -> None:
    stop = asyncio.Event()
    balancer = LoadBalancer(config, stop, listener, workers)
    await balancer.start()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await balancer.stop()
