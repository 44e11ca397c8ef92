"""Helpers for load-balancer tests: real servers on loopback, in this event loop."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from replica_app import replica_app

from skyform.serve.lb.config import LbConfig, ReplicaEntry, ReplicaSet, write_json_atomic
from skyform.serve.lb.server import LoadBalancer


@asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


@asynccontextmanager
async def replicas(count: int) -> AsyncIterator[list[str]]:
    """`count` replica apps; yields their URLs (replica ids 1..count)."""
    async with _many([replica_app(str(i + 1)) for i in range(count)]) as ports:
        yield [f"http://127.0.0.1:{p}" for p in ports]


@asynccontextmanager
async def _many(apps: list[web.Application]) -> AsyncIterator[list[int]]:
    if not apps:
        yield []
        return
    async with serving(apps[0]) as port, _many(apps[1:]) as rest:
        yield [port, *rest]


def replica_set(urls: list[str]) -> ReplicaSet:
    return ReplicaSet(
        replicas=tuple(ReplicaEntry(url=u, replica_id=i + 1) for i, u in enumerate(urls))
    )


def lb_files(folder: Path, urls: list[str], **settings: Any) -> Path:
    """The replica set and the config `python -m skyform.serve.lb` reads, as its controller
    writes them (the LB writes its ports to folder/ports.json); returns the config's path."""
    write_json_atomic(folder / "replicas.json", replica_set(urls))
    config = LbConfig(
        service="svc",
        port=0,
        replicas_file=str(folder / "replicas.json"),
        ports_file=str(folder / "ports.json"),
        **settings,
    )
    write_json_atomic(folder / "lb.json", config)
    return folder / "lb.json"


@asynccontextmanager
async def balancer(urls: list[str], **settings: Any) -> AsyncIterator[LoadBalancer]:
    config = LbConfig(service="svc", port=0, control_port=0, **settings)
    lb = LoadBalancer(config)
    await lb.start()
    lb.proxy.set_replicas(replica_set(urls))
    try:
        yield lb
    finally:
        await lb.stop()


async def dead_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    return port


@asynccontextmanager
async def hangup_server() -> AsyncIterator[int]:
    """Accepts a connection, reads the request, closes without answering."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_healthy(http: aiohttp.ClientSession, url: str, timeout: float = 20) -> None:
    """Until `url`/health answers 200."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            async with http.get(url + "/health") as resp:
                if resp.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        assert time.monotonic() < deadline, f"{url} never came up"
        await asyncio.sleep(0.05)
