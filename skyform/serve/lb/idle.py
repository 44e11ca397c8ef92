"""Client connections that have sent nothing for too long, so the load balancer can close
them (a slow or stalled client must not hold a connection, and a file descriptor, forever).

A connection is idle from the moment it is accepted until its first request is handled
(it has `header_timeout` to send its request line and headers: nginx's
client_header_timeout), and again from the end of each response until the next request
(`keepalive_timeout`). While a request is handled — its body read (which has its own
timeout, between reads), the replica waited on, the response streamed to a client that
reads it — the connection is busy and never closed here. Connections are the aiohttp
server's; they are first seen at a sweep, so a close comes at most one sweep late.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable
from typing import Generic, Protocol, TypeVar

C = TypeVar("C", bound=Hashable)  # a connection (frontend.ClientConnection)


class IdleClients(Generic[C]):
    def __init__(self, header_timeout: float, keepalive_timeout: float) -> None:
        self.header_timeout = header_timeout
        self.keepalive_timeout = keepalive_timeout
        self._busy: dict[C, int] = {}  # connection -> requests being handled
        self._idle_since: dict[C, tuple[float, bool]] = {}  # -> (since, answered before)

    def begin(self, connection: C) -> None:
        self._busy[connection] = self._busy.get(connection, 0) + 1

    def end(self, connection: C, now: float) -> None:
        left = self._busy.get(connection, 1) - 1
        if left > 0:
            self._busy[connection] = left
            return
        self._busy.pop(connection, None)
        self._idle_since[connection] = (now, True)

    def busy(self, connection: C) -> bool:
        return connection in self._busy

    def expired(self, connections: Iterable[C], now: float) -> list[C]:
        """The open `connections` idle for longer than their timeout (forgets closed ones)."""
        live = list(connections)
        found = []
        for connection in live:
            if connection in self._busy:
                continue
            since, answered = self._idle_since.setdefault(connection, (now, False))
            limit = self.keepalive_timeout if answered else self.header_timeout
            if now - since >= limit:
                found.append(connection)
        if len(self._idle_since) > len(live):
            kept = set(live)
            for gone in [c for c in self._idle_since if c not in kept]:
                del self._idle_since[gone]
        return found

    def sweep_interval(self) -> float:
        """How often to look: a fifth of the shorter timeout, between 0.05 s and 1 s."""
        return min(1.0, max(0.05, min(self.header_timeout, self.keepalive_timeout) / 5))


class IdleConnection(Hashable, Protocol):
    def force_close(self) -> None: ...


K = TypeVar("K", bound=IdleConnection)


async def close_idle_clients(idle: IdleClients[K], connections: Iterable[K]) -> None:
    """Every sweep interval, close the `connections` idle for too long (runs until cancelled)."""
    loop = asyncio.get_running_loop()
    every = idle.sweep_interval()
    while True:
        await asyncio.sleep(every)
        for connection in idle.expired(connections, loop.time()):
            connection.force_close()
