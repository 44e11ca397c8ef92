"""The reverse proxy: every method, path, query, header and body goes to one READY replica
unchanged (minus hop-by-hop headers), and the response comes back as it is produced.

- Retries: a connection failure before the replica answered (refused, reset, closed before
  the status line) is retried on another replica; nothing was sent to the client yet, so
  the client never sees it. Once response bytes flow, a failure closes the client's
  connection (there is no honest way to splice another replica's answer in).
- 503 when no replica is READY (the request still counts in the request log, which is what
  wakes a service scaled to zero); 502 when every attempt failed to connect; 504 when a
  replica sends nothing for `read_timeout_seconds`.
- Draining: a replica dropped from the set takes no new requests, and its in-flight ones
  finish; `GET /-/replicas` on the control port shows what is still draining.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from skyform.serve.lb.config import LbConfig, ReplicaSet
from skyform.serve.lb.frontend import ClientConnection
from skyform.serve.lb.http1 import (
    BadMessage,
    Head,
    connection_named,
    end_to_end,
    forwarded_for,
)
from skyform.serve.lb.idle import IdleClients
from skyform.serve.lb.metrics import Metrics
from skyform.serve.lb.policies import Target, make_policy
from skyform.serve.lb.requestlog import RequestLog
from skyform.serve.lb.upstream import (
    ClientHungUp,
    ReplicaGone,
    ReplicaQuiet,
    UpstreamConnection,
    UpstreamPool,
)

# the client's Expect was answered here, and its body is sent whole with a new length
NOT_FORWARDED = frozenset({b"content-length", b"expect", b"x-forwarded-for"})
# how long a stopping load balancer lets the requests in flight finish (aiohttp's default)
SHUTDOWN_SECONDS = 60.0
# the code counted for a request whose client hung up before its answer began (as nginx logs)
CLIENT_CLOSED = 499
log = logging.getLogger("skyform.serve.lb")


@dataclass(eq=False, slots=True)
class Exchange:
    """One client request on its way: the replicas tried, the request as forwarded."""

    client: ClientConnection
    head: Head
    started: float
    request: bytes = b""
    hostless: bool = False
    tried: list[str] = field(default_factory=list)
    completed: bool = False


class Proxy:
    def __init__(self, config: LbConfig, idle: IdleClients[Any] | None = None) -> None:
        self.config = config
        self.idle = idle or IdleClients(
            config.header_timeout_seconds, config.keepalive_timeout_seconds
        )
        self.policy = make_policy(config.policy, config.target_qps)
        self.metrics = Metrics()
        self.requests = RequestLog(config.request_log)
        self.targets: list[Target] = []
        self.draining: dict[str, Target] = {}
        self.inflight: dict[str, int] = {}
        self.pool: UpstreamPool | None = None
        # in flight in the other worker processes (serve/lb/workers.py), by URL
        self.remote_inflight: Callable[[], dict[str, int]] = dict
        self.connections: set[ClientConnection] = set()
        self.stopping = False  # finishing what is in flight: each connection closes after it
        self._tasks: set[asyncio.Task[None]] = set()  # the waiting parts of requests

    # -- the replica set ------------------------------------------------------------------

    def set_replicas(self, replica_set: ReplicaSet) -> None:
        new = [
            Target(e.url, e.replica_id, e.version, e.accelerator)
            for e in sorted(replica_set.replicas, key=lambda e: e.replica_id)
        ]
        urls = {t.url for t in new}
        inflight = self.all_inflight()
        for old in self.targets:
            if old.url not in urls and inflight.get(old.url, 0) > 0:
                self.draining[old.url] = old
        for url in urls:
            self.draining.pop(url, None)
        self.targets = new
        if self.pool is not None:
            self.pool.drop(urls | set(self.draining))
        log.info("replicas: %s", ", ".join(t.url for t in new) or "none")

    def all_inflight(self) -> dict[str, int]:
        """In flight by URL, in this process and (as last reported) in the other workers."""
        out = self.remote_inflight()
        for url, n in self.inflight.items():
            out[url] = out.get(url, 0) + n
        return out

    def prune_draining(self) -> None:
        """Forget the draining replicas nothing is in flight on any more."""
        inflight = self.all_inflight()
        for url in [u for u in self.draining if not inflight.get(u)]:
            del self.draining[url]

    def replica_view(self) -> dict[str, object]:
        inflight = self.all_inflight()
        return {
            which: [
                {"url": t.url, "replica_id": t.replica_id, "inflight": inflight.get(t.url, 0)}
                for t in targets
            ]
            for which, targets in (("ready", self.targets), ("draining", self.draining.values()))
        }

    def render_metrics(self, by_worker: dict[int, int] | None = None) -> str:
        inflight = self.all_inflight()
        by_replica = {
            t.replica_id: inflight.get(t.url, 0) for t in [*self.targets, *self.draining.values()]
        }
        return self.metrics.render(
            self.config.service, by_replica, len(self.targets), len(self.draining), by_worker
        )

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        self.pool = UpstreamPool(asyncio.get_running_loop(), self.config.connect_timeout_seconds)

    async def close(self) -> None:
        self.requests.flush(time.time(), everything=True)
        for connection in list(self.connections):
            connection.force_close()
        if self.pool is not None:
            self.pool.close()

    async def finish_requests(self, limit: float = SHUTDOWN_SECONDS) -> None:
        """Close the idle client connections and wait (at most `limit` seconds) for the
        requests in flight to be answered; their connections close after the answer."""
        self.stopping = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        for connection in list(self.connections):
            if not self.idle.busy(connection):
                connection.force_close()
        while loop.time() < deadline and any(self.idle.busy(c) for c in self.connections):
            await asyncio.sleep(0.05)

    def connection(self) -> ClientConnection:
        """The protocol of one new client connection (loop.create_server's factory)."""
        return ClientConnection(self)

    # -- one request ----------------------------------------------------------------------

    def dispatch(self, client: ClientConnection, head: Head) -> None:
        """Handle one request; `client.request_done()` is called once its answer is out.

        A request without a body, to a replica with an idle pooled connection (the common
        case), runs in callbacks only: no task, no future, no turn of the event loop between
        the request's bytes arriving and its being written to the replica, nor between the
        answer's bytes and the client's. A body to read, or a connection to open, takes a
        task for that part."""
        exchange = Exchange(client, head, time.perf_counter())
        if head.chunked or (head.length is not None and head.length > 0):
            self._spawn(exchange, self._read_body_then_forward(exchange))
        else:
            self._forward(exchange, b"" if head.length == 0 else None)
        # the counting comes after the request is on its way: work done before a write
        # delayed the answer about twice its own time, work after it hardly at all
        self.requests.record(time.time())
        if not exchange.completed:  # (a 503 is answered at once)
            self.idle.begin(client)  # busy until the response is out: never closed as idle

    async def _read_body_then_forward(self, exchange: Exchange) -> None:
        try:
            body = await exchange.client.read_body(exchange.head)
        except BadMessage as exc:
            exchange.client.send_error(exc.status, exc.message, close=True)
            self._complete(exchange, exc.status, None)
            return
        self._forward(exchange, body)

    def _forward(self, exchange: Exchange, body: bytes | None) -> None:
        client, head = exchange.client, exchange.head
        exchange.request = forwarded_request(client, head, body)
        # HTTP/1.0 may leave out Host, which the replica's HTTP/1.1 needs: its own then
        exchange.hostless = not head.has(b"host")
        self._attempt(exchange)

    def _attempt(self, exchange: Exchange) -> None:
        """Send the request to the next replica the policy picks, or answer 503/502."""
        assert self.pool is not None
        tried = exchange.tried
        target = None
        if len(tried) < self.config.max_attempts:
            target = self.policy.select(self.targets, self.inflight, tried)
        if target is None:
            if not tried:
                exchange.client.send_error(
                    503,
                    f"No ready replicas. Use `skyform serve status {self.config.service}` "
                    "to see the replicas.",
                )
                self._complete(exchange, 503, None)
            else:
                exchange.client.send_error(502, f"no replica answered ({len(tried)} tried)")
                self._complete(exchange, 502, None)
            return
        tried.append(target.url)
        self.inflight[target.url] = self.inflight.get(target.url, 0) + 1
        upstream = self.pool.take_idle(target.url)
        if upstream is None:
            self._spawn(exchange, self._connect_then_send(exchange, target))
        else:
            self._send(exchange, target, upstream)

    async def _connect_then_send(self, exchange: Exchange, target: Target) -> None:
        assert self.pool is not None
        try:
            upstream = await self.pool.connect(target.url)
        except (OSError, asyncio.TimeoutError) as exc:
            self._answered(exchange, target, None, ReplicaGone(f"connect: {exc!r}"))
            return
        self._send(exchange, target, upstream)

    def _send(self, exchange: Exchange, target: Target, upstream: UpstreamConnection) -> None:
        client = exchange.client
        client.upstream = upstream
        if client.writing_paused:  # the client has not read the last answer yet
            upstream.pause()
        sent = exchange.request
        if exchange.hostless:
            host = target.url.split("://", 1)[1].encode()
            line_end = sent.index(b"\r\n") + 2
            sent = sent[:line_end] + b"Host: " + host + b"\r\n" + sent[line_end:]
        upstream.start(
            sent,
            client,
            exchange.head.first == b"HEAD",
            self.config.read_timeout_seconds,
            lambda status, exc: self._answered(exchange, target, status, exc),
        )

    def _answered(
        self,
        exchange: Exchange,
        target: Target,
        status: int | None,
        exc: BaseException | None,
    ) -> None:
        """One attempt is over (the replica's data callback, or a failed connect)."""
        client = exchange.client
        try:
            client.upstream = None
            url = target.url
            left = self.inflight.get(url, 1) - 1
            if left > 0:
                self.inflight[url] = left
            else:
                self._idle_replica(url)
            if status is not None:
                self._complete(exchange, status, target.replica_id)
            elif isinstance(exc, ReplicaGone):
                self.metrics.retries += 1
                log.info("replica %s failed before answering: %r", target.url, exc)
                self._attempt(exchange)
            elif isinstance(exc, ReplicaQuiet):
                # the replica took the request and went quiet: it may be working on it, so it
                # is not sent again
                client.send_error(504, "the replica did not answer in time")
                self._complete(exchange, 504, target.replica_id)
            elif isinstance(exc, ClientHungUp):
                self._complete(exchange, CLIENT_CLOSED, target.replica_id)
            elif isinstance(exc, BadMessage):
                client.send_error(502, exc.message, close=True)
                self._complete(exchange, 502, target.replica_id)
            else:
                raise AssertionError(f"an exchange ended with {exc!r}")
        except Exception:  # a defect must not leave the client waiting forever
            self._failed(exchange)

    def _complete(self, exchange: Exchange, code: int, replica_id: int | None) -> None:
        if exchange.completed:
            return
        exchange.completed = True
        assert self.pool is not None
        self.idle.end(exchange.client, self.pool.loop.time())
        self.metrics.observe(code, time.perf_counter() - exchange.started, replica_id)
        exchange.client.request_done()

    def _failed(self, exchange: Exchange) -> None:
        log.exception("request failed")
        exchange.client.send_error(500, "the load balancer failed on this request", close=True)
        self._complete(exchange, 500, None)

    def _spawn(self, exchange: Exchange, step: Coroutine[Any, Any, None]) -> None:
        """Run `step` (a part of the request that waits) as a task, kept until it ends."""

        async def guarded() -> None:
            try:
                await step
            except Exception:
                self._failed(exchange)

        task = asyncio.get_running_loop().create_task(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _idle_replica(self, url: str) -> None:
        """Nothing is in flight on `url` in this process any more."""
        self.inflight.pop(url, None)
        if url in self.draining:
            self.prune_draining()


def forwarded_request(client: ClientConnection, head: Head, body: bytes | None) -> bytes:
    """The request line and headers for the replica (less the hop-by-hop ones, with
    X-Forwarded-For and -Proto), and the body."""
    # the replica's connection is kept open: a lone `Connection: keep-alive` is true of it
    fields = end_to_end(head, NOT_FORWARDED, keep_alive=True)
    # fields the client's Connection named are its hop's only, these two as any other
    named = connection_named(head) if head.hop else set()
    relayed = b"x-forwarded-for" in head.names and b"x-forwarded-for" not in named
    prior = forwarded_for(head) if relayed else []
    peer = client.peer.encode()
    added = b"\r\nX-Forwarded-For: " + (b", ".join([*prior, peer]) if prior else peer)
    if not head.has(b"x-forwarded-proto") or b"x-forwarded-proto" in named:
        added += b"\r\nX-Forwarded-Proto: " + client.scheme
    if body is not None:
        added += b"\r\nContent-Length: %d" % len(body)
    line = head.first + b" " + head.second + b" HTTP/1.1"
    return line + fields + added + b"\r\n\r\n" + (body or b"")
