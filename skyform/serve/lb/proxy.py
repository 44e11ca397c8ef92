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
from collections.abc import Iterable
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from skyform.serve.lb.config import LbConfig, ReplicaSet
from skyform.serve.lb.idle import IdleClients
from skyform.serve.lb.metrics import Metrics
from skyform.serve.lb.policies import Target, make_policy
from skyform.serve.lb.requestlog import RequestLog

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
# aiohttp's client would add these on its own; the client's own values (or none) go through
NO_AUTO_HEADERS = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")
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
        self.session: aiohttp.ClientSession | None = None

    # -- the replica set ------------------------------------------------------------------

    def set_replicas(self, replica_set: ReplicaSet) -> None:
        new = [
            Target(e.url, e.replica_id, e.version, e.accelerator)
            for e in sorted(replica_set.replicas, key=lambda e: e.replica_id)
        ]
        urls = {t.url for t in new}
        for old in self.targets:
            if old.url not in urls and self.inflight.get(old.url, 0) > 0:
                self.draining[old.url] = old
        for url in urls:
            self.draining.pop(url, None)
        self.targets = new
        log.info("replicas: %s", ", ".join(t.url for t in new) or "none")

    def replica_view(self) -> dict[str, object]:
        return {
            "ready": [
                {"url": t.url, "replica_id": t.replica_id, "inflight": self.inflight.get(t.url, 0)}
                for t in self.targets
            ],
            "draining": [
                {"url": t.url, "replica_id": t.replica_id, "inflight": self.inflight.get(t.url, 0)}
                for t in self.draining.values()
            ],
        }

    def _inflight_by_replica(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for target in [*self.targets, *self.draining.values()]:
            out[target.replica_id] = self.inflight.get(target.url, 0)
        return out

    def render_metrics(self) -> str:
        return self.metrics.render(
            self.config.service, self._inflight_by_replica(), len(self.targets), len(self.draining)
        )

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        connector = aiohttp.TCPConnector(limit=0, force_close=False, enable_cleanup_closed=True)
        self.session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=NO_AUTO_HEADERS,
        )

    async def close(self) -> None:
        self.requests.flush(time.time(), everything=True)
        if self.session is not None:
            await self.session.close()

    # -- one request ----------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        self.requests.record(time.time())
        code, replica_id = 500, None
        connection = request.protocol
        self.idle.begin(connection)  # busy until the response is out: never closed as idle
        try:
            response, code, replica_id = await self._forward(request)
            return response
        except web.HTTPException as exc:
            code = exc.status
            raise
        finally:
            self.idle.end(connection, asyncio.get_running_loop().time())
            self.metrics.observe(code, time.perf_counter() - started, replica_id)

    async def _forward(self, request: web.Request) -> tuple[web.StreamResponse, int, int | None]:
        assert self.session is not None
        body = await self._read_body(request) if request.body_exists else None
        headers = forwarded_headers(request)
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=self.config.connect_timeout_seconds,
            sock_read=self.config.read_timeout_seconds,
        )
        tried: list[str] = []
        for _attempt in range(self.config.max_attempts):
            target = self.policy.select(self.targets, self.inflight, tried)
            if target is None:
                break
            tried.append(target.url)
            self.inflight[target.url] = self.inflight.get(target.url, 0) + 1
            try:
                try:
                    upstream = await self.session.request(
                        request.method,
                        target.url + request.rel_url.raw_path_qs,
                        headers=headers,
                        data=body,
                        allow_redirects=False,
                        timeout=timeout,
                        compress=None,
                    )
                except aiohttp.SocketTimeoutError:
                    # the replica took the request and went quiet: it may be working on it,
                    # so it is not sent again
                    return _error(504, "the replica did not answer in time"), 504, target.replica_id
                except (aiohttp.ClientConnectionError, asyncio.TimeoutError, OSError) as exc:
                    self.metrics.retries += 1
                    log.info("replica %s failed before answering: %r", target.url, exc)
                    continue
                try:
                    response = await self._relay(request, upstream)
                finally:
                    upstream.release()
                return response, upstream.status, target.replica_id
            finally:
                self._done(target.url)
        if not tried:
            return (
                _error(
                    503,
                    f"No ready replicas. Use `skyform serve status {self.config.service}` "
                    "to see the replicas.",
                ),
                503,
                None,
            )
        return _error(502, f"no replica answered ({len(tried)} tried)"), 502, None

    async def _read_body(self, request: web.Request) -> bytes:
        """The whole body; a client that goes `body_timeout_seconds` without sending any of
        it gets 408 (a slow upload that keeps coming is read to its end)."""
        limit, wait = self.config.max_body_bytes, self.config.body_timeout_seconds
        parts: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = await asyncio.wait_for(request.content.readany(), wait)
            except asyncio.TimeoutError:
                raise web.HTTPRequestTimeout(
                    text=f"no part of the request body arrived for {wait:g} s"
                ) from None
            if not chunk:
                return b"".join(parts)
            size += len(chunk)
            if limit and size > limit:
                raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=size)
            parts.append(chunk)

    async def _relay(
        self, request: web.Request, upstream: aiohttp.ClientResponse
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        response.headers.clear()
        response.headers.extend(without_hop_by_hop(upstream.headers.items(), upstream.headers))
        length = upstream.headers.get("Content-Length")
        if length is None and request.method != "HEAD" and upstream.status not in (204, 304):
            response.enable_chunked_encoding()
        await response.prepare(request)
        if request.method == "HEAD":
            await response.write_eof()
            return response
        try:
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            # headers are out: the client learns of the failure as a cut connection
            log.info("replica failed mid-response: %r", exc)
            if request.transport is not None:
                request.transport.close()
            return response
        await response.write_eof()
        return response

    def _done(self, url: str) -> None:
        left = self.inflight.get(url, 1) - 1
        if left > 0:
            self.inflight[url] = left
            return
        self.inflight.pop(url, None)
        self.draining.pop(url, None)


def without_hop_by_hop(
    items: Iterable[tuple[str, str]], headers: CIMultiDict[str] | object
) -> CIMultiDict[str]:
    """Drop the hop-by-hop headers, and those the Connection header names."""
    named: set[str] = set()
    getall = getattr(headers, "getall", None)
    if getall is not None:
        for value in getall("Connection", []):
            named.update(part.strip().lower() for part in value.split(","))
    out: CIMultiDict[str] = CIMultiDict()
    for key, value in items:
        lowered = key.lower()
        if lowered in HOP_BY_HOP or lowered in named:
            continue
        out.add(key, value)
    return out


def forwarded_headers(request: web.Request) -> CIMultiDict[str]:
    headers = without_hop_by_hop(request.headers.items(), request.headers)
    headers.popall("Content-Length", None)  # recomputed from the (unchanged) body
    peer = request.remote or ""
    prior = request.headers.get("X-Forwarded-For")
    headers["X-Forwarded-For"] = f"{prior}, {peer}" if prior else peer
    headers.setdefault("X-Forwarded-Proto", request.scheme)
    return headers


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)
