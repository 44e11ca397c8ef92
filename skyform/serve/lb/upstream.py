"""Connections to the replicas, kept open and reused (one request at a time on each), and
the relay of one response: its bytes go to the client from the replica's data callback as
they arrive, the new head sent together with the first body bytes, no task in between.

One exchange ends in a call of its `done` callback, from the replica's data callback, with
the status relayed, or before any answer byte with `ReplicaGone` (closed, reset: safe to
retry elsewhere) or `ReplicaQuiet` (no byte for the read timeout: the replica may be working
on it, so it is not retried). A callback, not a future: a future's waiter runs one turn of
the event loop later, and at low load those turns were most of the latency the balancer added.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlsplit

from skyform.serve.lb.http1 import (
    MAX_HEAD_BYTES,
    NO_BODY_STATUSES,
    BadMessage,
    ChunkedScanner,
    Head,
    LastHead,
    parse_response_head,
)

LENGTH, CHUNKED, UNTIL_CLOSE, EMPTY = range(4)
SWEEP_SECONDS = 1.0  # how often the pool looks for replicas gone quiet, at most
MIN_SWEEP_SECONDS = 0.01


class ReplicaGone(Exception):
    """The replica closed or reset the connection before answering."""


class ReplicaQuiet(Exception):
    """The replica sent nothing for the read timeout before its answer's head."""


# how an exchange ended: (the status relayed, None) or (None, why it failed)
Done = Callable[[int | None, BaseException | None], None]


class ClientHungUp(Exception):
    """The client hung up before the replica's answer began: nothing to relay or retry."""


class Client(Protocol):
    """Where a response goes: the client's connection (frontend.ClientConnection)."""

    http10: bool  # an HTTP/1.0 client: no chunked framing, closed after the response

    def response_head(self, head: Head, framing: int) -> bytes: ...
    def send(self, data: bytes) -> None: ...
    def send_chunk(self, data: bytes) -> None: ...
    def end_until_close(self) -> None: ...
    def cut(self) -> None: ...


class UpstreamConnection(asyncio.Protocol):
    def __init__(self, pool: UpstreamPool, url: str) -> None:
        self.pool = pool
        self.url = url
        self.loop = pool.loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.client: Client | None = None
        self._done: Done | None = None
        self._buf = b""
        self._head: Head | None = None
        self._framing = EMPTY
        self._left = 0
        self._scanner: ChunkedScanner | None = None
        self._read_timeout = 0.0
        self._last_read = 0.0
        self._no_body = False
        self.paused = False  # reading paused: the client had not read the last answer
        self._parse_head = LastHead(parse_response_head)

    # -- asyncio callbacks ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        if self.client is None:  # bytes nobody asked for: this connection cannot be reused
            self._close()
            return
        if self._head is None:
            self._on_head_bytes(data)
        else:
            self._on_body(data, b"")
        self._last_read = self.loop.time()  # after the relay: see `start`

    def eof_received(self) -> bool:
        return False  # the transport closes; connection_lost ends the exchange

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool.forget(self)
        if self.client is None or self._done is None:
            return
        if self._head is None:
            self._fail(ReplicaGone(str(exc) if exc else "closed before answering"))
        elif self._framing == UNTIL_CLOSE:
            self.client.end_until_close()
            self._finish(reusable=False)
        else:  # mid-response: the client learns of it as a cut connection
            self.client.cut()
            self._finish(reusable=False)

    def pause(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.pause_reading()
            self.paused = True

    def resume(self) -> None:
        if self.paused and self.transport is not None and not self.closed:
            self.transport.resume_reading()
            self.paused = False

    # -- one exchange ---------------------------------------------------------------------

    def start(
        self, request: bytes, client: Client, no_body: bool, read_timeout: float, done: Done
    ) -> None:
        """Send `request` and relay its answer to `client`; `done` is called once, when the
        exchange is over (it may be called before this returns: a write that fails)."""
        assert self.transport is not None
        self.client = client
        self._done = done
        self._head = None
        self._buf = b""
        self._no_body = no_body
        self._read_timeout = read_timeout
        try:
            self.transport.write(request)
        except RuntimeError as exc:
            # the replica hung up and libuv closed the handle; our connection_lost has not run
            # yet (seen when a pod was deleted): nothing was sent, so it is safe to retry
            self._fail(ReplicaGone(f"closed before the request was sent: {exc}"))
            return
        # after the write (no answer can come before this returns to the event loop): work
        # before a write delayed the answer about twice its own time
        self._last_read = self.loop.time()
        self.pool.watch(self, read_timeout)

    def client_gone(self) -> None:
        """The client hung up: stop relaying, and drop the connection (mid-message)."""
        if self._done is None:
            return
        if self._head is None:
            self._fail(ClientHungUp())
        else:
            self._finish(reusable=False)

    def _on_head_bytes(self, data: bytes) -> None:
        buf = self._buf + data if self._buf else data
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                self._buf = buf
                if len(buf) > MAX_HEAD_BYTES:
                    self._bad("the replica's response head is too large")
                return
            try:
                head = self._parse_head(buf[:end])
            except BadMessage as exc:
                self._bad(exc.message)
                return
            buf = buf[end + 4 :]
            status = int(head.first)
            if 100 <= status < 200:
                continue  # 100 Continue and other interim answers are not relayed
            break
        self._buf = b""
        self._head = head
        if self._no_body or status in NO_BODY_STATUSES:
            self._framing = EMPTY
        elif head.chunked:
            self._framing = CHUNKED
            self._scanner = ChunkedScanner(keep=self.client is not None and self.client.http10)
        elif head.length is not None:
            self._framing = LENGTH
            self._left = head.length
        else:
            self._framing = UNTIL_CLOSE
        assert self.client is not None
        self._on_body(buf, self.client.response_head(head, self._framing))

    def _on_body(self, data: bytes, head: bytes) -> None:
        client = self.client
        assert client is not None and self._head is not None
        framing = self._framing
        if framing == LENGTH:
            if len(data) >= self._left:
                extra = len(data) > self._left
                client.send(head + data[: self._left])
                self._left = 0
                self._finish(reusable=not extra and not self._head.close)
                return
            self._left -= len(data)
            client.send(head + data)
        elif framing == CHUNKED:
            assert self._scanner is not None
            try:
                end = self._scanner.feed(data)
            except BadMessage:
                client.send(head)
                client.cut()
                self._finish(reusable=False)
                return
            if self._scanner.data is not None:  # an HTTP/1.0 client gets the data alone
                client.send(head + b"".join(self._scanner.data))
                self._scanner.data.clear()
            else:
                client.send(head + (data if end is None else data[:end]))
            if end is not None:
                self._finish(reusable=end == len(data) and not self._head.close)
        elif framing == UNTIL_CLOSE:
            if head:
                client.send(head)
            if data:
                client.send_chunk(data)
        else:
            client.send(head)
            self._finish(reusable=not data and not self._head.close)

    def quiet_since(self, now: float) -> bool:
        """Whether the replica has sent nothing for the read timeout (the pool's sweep)."""
        return self._done is not None and now - self._last_read >= self._read_timeout

    def end_quiet(self) -> None:
        """The replica went quiet: 504 before its answer's head, a cut connection after."""
        if self._head is None:
            self._fail(ReplicaQuiet())
        else:
            assert self.client is not None
            self.client.cut()
            self._finish(reusable=False)

    def _bad(self, message: str) -> None:
        self._fail(BadMessage(502, message))

    def _fail(self, exc: Exception) -> None:
        done = self._end()
        self._close()
        if done is not None:
            done(None, exc)

    def _finish(self, reusable: bool) -> None:
        assert self._head is not None
        status = self._head.status
        done = self._end()
        if reusable and not self.closed:
            self.pool.release(self)
        else:
            self._close()
        if done is not None:  # last: it may hand this connection to the next request
            done(status, None)

    def _end(self) -> Done | None:
        """The exchange is over: its `done`, to be called once (None if it was already)."""
        done, self._done = self._done, None
        self.client = None
        self.pool.unwatch(self)
        return done

    def _close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class UpstreamPool:
    """Idle keep-alive connections per replica URL (used last in, first out)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, connect_timeout: float) -> None:
        self.loop = loop
        self.connect_timeout = connect_timeout
        self._idle: dict[str, list[UpstreamConnection]] = {}
        self._addresses: dict[str, tuple[str, int, ssl.SSLContext | None]] = {}
        self._tls: ssl.SSLContext | None = None
        # connections with an exchange under way, looked at by one sweep for a quiet replica:
        # a timer per request, started and cancelled, cost more than the rest of its path
        self._busy: set[UpstreamConnection] = set()
        self._sweep: asyncio.TimerHandle | None = None
        self._shortest_timeout = float("inf")  # of the exchanges watched so far

    def watch(self, connection: UpstreamConnection, read_timeout: float) -> None:
        self._busy.add(connection)
        self._shortest_timeout = min(self._shortest_timeout, read_timeout)
        if self._sweep is None:
            self._sweep = self.loop.call_later(self._sweep_interval(), self._look_for_quiet)

    def _sweep_interval(self) -> float:
        # a quarter of the timeout late at most (the test's 0.3 s timeout: 0.075 s)
        return min(SWEEP_SECONDS, max(MIN_SWEEP_SECONDS, self._shortest_timeout / 4))

    def unwatch(self, connection: UpstreamConnection) -> None:
        self._busy.discard(connection)

    def _look_for_quiet(self) -> None:
        self._sweep = None
        now = self.loop.time()
        for connection in [c for c in self._busy if c.quiet_since(now)]:
            connection.end_quiet()
        if self._busy:
            self._sweep = self.loop.call_later(self._sweep_interval(), self._look_for_quiet)

    def take_idle(self, url: str) -> UpstreamConnection | None:
        """An open idle connection to `url`, if the pool has one."""
        idle = self._idle.get(url)
        while idle:
            connection = idle.pop()
            transport = connection.transport
            if not connection.closed and transport is not None and not transport.is_closing():
                connection.resume()  # if the last client's backpressure paused it
                return connection
        return None

    async def connect(self, url: str) -> UpstreamConnection:
        host, port, context = self._address(url)
        factory: Callable[[], UpstreamConnection] = lambda: UpstreamConnection(self, url)  # noqa: E731
        _transport, connection = await asyncio.wait_for(
            self.loop.create_connection(
                factory, host, port, ssl=context, server_hostname=host if context else None
            ),
            self.connect_timeout,
        )
        return connection

    def release(self, connection: UpstreamConnection) -> None:
        self._idle.setdefault(connection.url, []).append(connection)

    def forget(self, connection: UpstreamConnection) -> None:
        idle = self._idle.get(connection.url)
        if idle and connection in idle:
            idle.remove(connection)

    def drop(self, keep: set[str]) -> None:
        """Close the idle connections to replicas not in `keep`."""
        for url in [u for u in self._idle if u not in keep]:
            for connection in self._idle.pop(url):
                connection._close()
            self._addresses.pop(url, None)

    def close(self) -> None:
        self.drop(set())
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None

    def _address(self, url: str) -> tuple[str, int, ssl.SSLContext | None]:
        found = self._addresses.get(url)
        if found is None:
            parts = urlsplit(url)
            tls = parts.scheme == "https"
            if tls and self._tls is None:
                self._tls = ssl.create_default_context()
            found = (
                parts.hostname or "",
                parts.port or (443 if tls else 80),
                self._tls if tls else None,
            )
            self._addresses[url] = found
        return found
