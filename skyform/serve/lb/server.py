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
import ssl
import time
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from skyform.errors import SkyformError
from skyform.serve.lb.config import LbConfig, load_replica_set, parse_replica_set
from skyform.serve.lb.idle import IdleClients
from skyform.serve.lb.proxy import Proxy

WATCH_INTERVAL_SECONDS = 0.25
FLUSH_INTERVAL_SECONDS = 1.0
log = logging.getLogger("skyform.serve.lb")


class LoadBalancer:
    def __init__(self, config: LbConfig, stop: asyncio.Event | None = None) -> None:
        self.config = config
        self.stop_event = stop
        self.idle: IdleClients[RequestHandler] = IdleClients(
            config.header_timeout_seconds, config.keepalive_timeout_seconds
        )
        self.proxy = Proxy(config, self.idle)
        self.runners: list[web.AppRunner] = []
        self.port = 0
        self.control_port = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._replicas_mtime: int | None = None

    async def start(self) -> None:
        await self.proxy.start()
        self._reload_replicas()
        public = web.Application(client_max_size=self.config.max_body_bytes)
        public.router.add_route("*", "/{path:.*}", self.proxy.handle)
        control = web.Application()
        control.router.add_get("/metrics", self._metrics)
        control.router.add_get("/-/replicas", self._get_replicas)
        control.router.add_put("/-/replicas", self._put_replicas)
        control.router.add_get("/-/health", self._health)
        # aiohttp's own idle timer agrees with ours; a body left unread after a 408 is
        # drained for at most one more body timeout
        clients: dict[str, Any] = {
            "keepalive_timeout": self.config.keepalive_timeout_seconds,
            "lingering_time": self.config.body_timeout_seconds,
        }
        self.port = await self._listen(
            public, self.config.host, self.config.port, tls=True, **clients
        )
        self.control_port = await self._listen(
            control, self.config.control_host, self.config.control_port, tls=False
        )
        self._tasks = [
            asyncio.create_task(self._watch_replicas()),
            asyncio.create_task(self._flush_requests()),
            asyncio.create_task(self._close_idle_clients(self.runners[0])),
        ]
        if self.config.ports_file:
            Path(self.config.ports_file).write_text(
                json.dumps({"port": self.port, "control_port": self.control_port})
            )
        log.info("listening on %s:%d (control %d)", self.config.host, self.port, self.control_port)

    async def _listen(
        self, app: web.Application, host: str, port: int, *, tls: bool, **protocol: Any
    ) -> int:
        runner = web.AppRunner(app, access_log=None, handle_signals=False, **protocol)
        await runner.setup()
        context = self._ssl_context() if tls else None
        site = web.TCPSite(runner, host, port, ssl_context=context, reuse_address=True)
        await site.start()
        self.runners.append(runner)
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        return int(sockets[0].getsockname()[1]) if sockets else port

    def _ssl_context(self) -> ssl.SSLContext | None:
        if not (self.config.tls_certfile and self.config.tls_keyfile):
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.config.tls_certfile, self.config.tls_keyfile)
        return context

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for runner in reversed(self.runners):
            await runner.cleanup()
        await self.proxy.close()

    # -- control endpoints ----------------------------------------------------------------

    async def _metrics(self, _request: web.Request) -> web.Response:
        return web.Response(
            text=self.proxy.render_metrics(), content_type="text/plain", charset="utf-8"
        )

    async def _get_replicas(self, _request: web.Request) -> web.Response:
        return web.json_response(self.proxy.replica_view())

    async def _put_replicas(self, request: web.Request) -> web.Response:
        try:
            replica_set = parse_replica_set(await request.read())
        except SkyformError as exc:
            return web.json_response({"error": exc.message}, status=400)
        self.proxy.set_replicas(replica_set)
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
            self.proxy.set_replicas(load_replica_set(path))
        except SkyformError as exc:
            log.warning("keeping the current replicas: %s", exc.message)

    async def _watch_replicas(self) -> None:
        while True:
            await asyncio.sleep(WATCH_INTERVAL_SECONDS)
            self._reload_replicas()
            parent = self.config.parent_pid
            if parent is not None and os.getppid() != parent and self.stop_event is not None:
                log.warning("the controller (pid %d) is gone: stopping", parent)
                self.stop_event.set()

    async def _close_idle_clients(self, runner: web.AppRunner) -> None:
        loop = asyncio.get_running_loop()
        every = self.idle.sweep_interval()
        while True:
            await asyncio.sleep(every)
            server = runner.server
            if server is None:
                continue
            for connection in self.idle.expired(server.connections, loop.time()):
                connection.force_close()

    async def _flush_requests(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_INTERVAL_SECONDS)
            try:
                self.proxy.requests.flush(time.time())
            except OSError as exc:
                log.warning("cannot write the request log: %s", exc)


async def serve_forever(config: LbConfig) -> None:
    stop = asyncio.Event()
    balancer = LoadBalancer(config, stop)
    await balancer.start()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await balancer.stop()
