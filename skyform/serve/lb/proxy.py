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
from collections.abc import Callable
from typing import Any

from skyform.serve.lb.config import LbConfig, ReplicaSet
from skyform.serve.lb.frontend import ClientConnection
from skyform.serve.lb.http1 import BadMessage, Head, end_to_end, serialize
from skyform.serve.lb.idle import IdleClients
from skyform.serve.lb.metrics import Metrics
from skyform.serve.lb.policies import Target, make_policy
from skyform.serve.lb.requestlog import RequestLog
from skyform.serve.lb.upstream import ReplicaGone, ReplicaQuiet, UpstreamPool

# the client's Expect was answered here, and its body is sent whole with a new length
NOT_FORWARDED = frozenset({b"content-length", b"expect", b"x-forwarded-for"})
# how long a stopping load balancer lets the requests in flight finish (aiohttp's default)
SHUTDOWN_SECONDS = 60.0
log = logging.getLogger("skyform.serve.lb")


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

    async def handle(self, client: ClientConnection, head: Head) -> None:
        started = time.perf_counter()
        self.requests.record(time.time())
        code, replica_id = 500, None
        self.idle.begin(client)  # busy until the response is out: never closed as idle
        try:
            try:
                body = await client.read_body(head)
            except BadMessage as exc:
                code = exc.status
                client.send_error(exc.status, exc.message, close=True)
                return
            code, replica_id = await self._forward(client, head, body)
        finally:
            self.idle.end(client, asyncio.get_running_loop().time())
            self.metrics.observe(code, time.perf_counter() - started, replica_id)

    async def _forward(
        self, client: ClientConnection, head: Head, body: bytes | None
    ) -> tuple[int, int | None]:
        assert self.pool is not None
        request = forwarded_request(client, head, body)
        # HTTP/1.0 may leave out Host, which the replica's HTTP/1.1 needs: its own then
        hostless = not any(n.lower() == b"host" for n, _ in head.headers)
        no_body = head.first == b"HEAD"
        tried: list[str] = []
        for _attempt in range(self.config.max_attempts):
            target = self.policy.select(self.targets, self.inflight, tried)
            if target is None:
                break
            tried.append(target.url)
            self.inflight[target.url] = self.inflight.get(target.url, 0) + 1
            try:
                try:
                    upstream = await self.pool.acquire(target.url)
                except (OSError, asyncio.TimeoutError) as exc:
                    self.metrics.retries += 1
                    log.info("replica %s failed before answering: %r", target.url, exc)
                    continue
                client.upstream = upstream
                if client.writing_paused:  # the client has not read the last answer yet
                    upstream.pause()
                sent = request
                if hostless:
                    host = target.url.split("://", 1)[1].encode()
                    line_end = request.index(b"\r\n") + 2
                    sent = request[:line_end] + b"Host: " + host + b"\r\n" + request[line_end:]
                try:
                    status = await upstream.start(
                        sent, client, no_body, self.config.read_timeout_seconds
                    )
                except ReplicaGone as exc:
                    self.metrics.retries += 1
                    log.info("replica %s failed before answering: %r", target.url, exc)
                    continue
                except ReplicaQuiet:
                    # the replica took the request and went quiet: it may be working on it,
                    # so it is not sent again
                    client.send_error(504, "the replica did not answer in time")
                    return 504, target.replica_id
                except BadMessage as exc:
                    client.send_error(502, exc.message, close=True)
                    return 502, target.replica_id
                finally:
                    client.upstream = None
                return status, target.replica_id
            finally:
                self._done(target.url)
        if not tried:
            client.send_error(
                503,
                f"No ready replicas. Use `skyform serve status {self.config.service}` "
                "to see the replicas.",
            )
            return 503, None
        client.send_error(502, f"no replica answered ({len(tried)} tried)")
        return 502, None

    def _done(self, url: str) -> None:
        left = self.inflight.get(url, 1) - 1
        if left > 0:
            self.inflight[url] = left
            return
        self.inflight.pop(url, None)
        if url in self.draining:
            self.prune_draining()


def forwarded_request(client: ClientConnection, head: Head, body: bytes | None) -> bytes:
    """The request line and headers for the replica (less the hop-by-hop ones, with
    X-Forwarded-For and -Proto), and the body."""
    headers = end_to_end(head.headers)
    prior = [v for n, v in headers if n.lower() == b"x-forwarded-for"]
    headers = [(n, v) for n, v in headers if n.lower() not in NOT_FORWARDED]
    peer = client.peer.encode()
    headers.append((b"X-Forwarded-For", b", ".join([*prior, peer]) if prior else peer))
    if not any(n.lower() == b"x-forwarded-proto" for n, _ in headers):
        headers.append((b"X-Forwarded-Proto", client.scheme))
    if body is not None:
        headers.append((b"Content-Length", b"%d" % len(body)))
    line = head.first + b" " + head.second + b" HTTP/1.1"
    return serialize(line, headers) + (body or b"")
