"""The client side of the load balancer: one asyncio protocol per client connection that
reads requests (keep-alive and pipelined, one at a time), hands each to the proxy as its
head is complete, from the data callback itself, and writes the response the replica relay
produces.

A request's head is read without a timer of its own (a client that sends nothing is closed
by the idle sweep: serve/lb/idle.py); its body, if any, is read whole with
`body_timeout_seconds` between parts (408 when it stalls, 413 past `max_body_bytes`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from typing import Protocol

from skyform.serve.lb.config import LbConfig
from skyform.serve.lb.http1 import (
    MAX_HEAD_BYTES,
    BadMessage,
    ChunkedScanner,
    Head,
    LastHead,
    end_to_end,
    error_response,
    parse_request_head,
)
from skyform.serve.lb.upstream import CHUNKED, UNTIL_CLOSE, UpstreamConnection


class Handler(Protocol):
    """What a client connection hands its requests to (proxy.Proxy)."""

    config: LbConfig
    connections: set[ClientConnection]
    stopping: bool

    def dispatch(self, client: ClientConnection, head: Head) -> None: ...


def tls_context(config: LbConfig) -> ssl.SSLContext | None:
    """The public listener's TLS, when the service has a certificate."""
    if not (config.tls_certfile and config.tls_keyfile):
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config.tls_certfile, config.tls_keyfile)
    return context


log = logging.getLogger("skyform.serve.lb")
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
BUFFER_BYTES = 1024 * 1024  # read ahead of the request being handled, at most


class ClientConnection(asyncio.Protocol):
    def __init__(self, proxy: Handler) -> None:
        self.proxy = proxy
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.scheme = b"http"
        self.http10 = False
        self.upstream: UpstreamConnection | None = None
        self._buf = bytearray()
        self._waiter: asyncio.Future[None] | None = None
        self._eof = False
        self._lost = False
        self._close_after = False
        self.writing_paused = False
        self._reading_paused = False
        self._busy = False  # a request is being handled: the next one waits for its answer
        self._dispatching = False
        self._parse_head = LastHead(parse_request_head)

    # -- asyncio callbacks ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if isinstance(peer, tuple) else ""
        if transport.get_extra_info("sslcontext") is not None:
            self.scheme = b"https"
        self.proxy.connections.add(self)

    def data_received(self, data: bytes) -> None:
        self._buf += data
        if len(self._buf) > BUFFER_BYTES and self.transport is not None:
            # a client that sends ahead (pipelined requests) waits until we ask for more
            self.transport.pause_reading()
            self._reading_paused = True
        self._arrived()

    def eof_received(self) -> bool:
        self._eof = True
        self._arrived()
        return True  # a client that half-closes after its request still gets the answer

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self.proxy.connections.discard(self)
        self._wake()
        if self.upstream is not None:
            self.upstream.client_gone()

    def pause_writing(self) -> None:
        self.writing_paused = True
        if self.upstream is not None:
            self.upstream.pause()

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self.upstream is not None:
            self.upstream.resume()

    # -- what the replica relay calls -----------------------------------------------------

    def response_head(self, head: Head, framing: int) -> bytes:
        added = b""
        if self.http10:
            self._close_after = True  # its end is the connection's end
        elif framing in (CHUNKED, UNTIL_CLOSE):
            added = b"\r\nTransfer-Encoding: chunked"
        if self._close_after:
            added += b"\r\nConnection: close"
        status = b"HTTP/1.1 " + head.first + b" " + head.second
        return status + end_to_end(head, keep_alive=not self._close_after) + added + b"\r\n\r\n"

    def send(self, data: bytes) -> None:
        if data and self.transport is not None and not self._lost:
            self.transport.write(data)

    def send_chunk(self, data: bytes) -> None:
        self.send(data if self.http10 else b"%x\r\n%b\r\n" % (len(data), data))

    def end_until_close(self) -> None:
        if not self.http10:
            self.send(b"0\r\n\r\n")

    def cut(self) -> None:
        self._close_after = True
        if self.transport is not None:
            self.transport.close()

    def force_close(self) -> None:
        """Close an idle connection (the idle sweep's verdict)."""
        if self.transport is not None:
            self.transport.close()

    def send_error(self, status: int, message: str, *, close: bool = False) -> None:
        self._close_after = self._close_after or close
        body = json.dumps({"error": message}).encode()
        self.send(error_response(status, body, close=self._close_after))

    # -- the request loop -----------------------------------------------------------------

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _more(self) -> bool:
        """Wait for more bytes; False when the client sent EOF or is gone."""
        if self._eof or self._lost:
            return False
        if self._reading_paused and self.transport is not None:
            self._reading_paused = False
            self.transport.resume_reading()
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        return not self._lost and (bool(self._buf) or not self._eof)

    def _arrived(self) -> None:
        """Bytes or the EOF came: to the body being read, else to the next request."""
        if self._busy:
            self._wake()
        else:
            self._dispatch()

    def request_done(self) -> None:
        """The proxy's word that the request's answer is out: on to the next one."""
        self._busy = False
        if not self._dispatching:
            self._dispatch()

    def _dispatch(self) -> None:
        """Hand each complete request head in the buffer to the proxy, one at a time; close
        the connection when it is over (Connection: close, EOF, a bad head)."""
        if self._dispatching:
            return
        self._dispatching = True
        try:
            while not self._busy and not self._lost and not self._close_after:
                end = self._buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(self._buf) > MAX_HEAD_BYTES:
                        self.send_error(431, "the request head is too large", close=True)
                    elif not self._eof:
                        if self._reading_paused and self.transport is not None:
                            self._reading_paused = False
                            self.transport.resume_reading()
                        return  # more bytes will come
                    break
                data = bytes(self._buf[:end])
                del self._buf[: end + 4]
                head = self._parse_head(data)
                self.http10 = head.version == b"HTTP/1.0"
                self._close_after = head.close or self.http10 or self.proxy.stopping
                self._busy = True
                self.proxy.dispatch(self, head)
        except BadMessage as exc:
            self._busy = False
            self.send_error(exc.status, exc.message, close=True)
        except Exception:  # a defect must not leave the client waiting forever
            self._busy = False
            log.exception("request failed")
            self.send_error(500, "the load balancer failed on this request", close=True)
        finally:
            self._dispatching = False
        if not self._busy and self.transport is not None and not self._lost:
            self.transport.close()

    async def read_body(self, head: Head) -> bytes | None:
        """The request's whole body (None when it has none); BadMessage 408/413 otherwise."""
        if head.length is None and not head.chunked:
            return None
        expects = any(n == b"expect" and v.strip() == b"100-continue" for n, v in head.noted)
        if expects and not self._buf:
            self.send(CONTINUE)
        limit = self.proxy.config.max_body_bytes
        wait = self.proxy.config.body_timeout_seconds
        if head.length is not None:
            if limit and head.length > limit:
                raise BadMessage(413, f"the body is larger than {limit} bytes")
            while len(self._buf) < head.length:
                await self._body_part(wait)
            body = bytes(self._buf[: head.length])
            del self._buf[: head.length]
            return body
        scanner = ChunkedScanner(keep=True)
        while True:
            end = scanner.feed(bytes(self._buf))
            if limit and scanner.size > limit:
                raise BadMessage(413, f"the body is larger than {limit} bytes")
            if end is not None:
                # the scanner saw the buffer whole: what is past `end` is the next request
                del self._buf[:end]
                assert scanner.data is not None
                return b"".join(scanner.data)
            self._buf.clear()
            await self._body_part(wait)

    async def _body_part(self, wait: float) -> None:
        try:
            more = await asyncio.wait_for(self._more(), wait)
        except asyncio.TimeoutError:
            raise BadMessage(408, f"no part of the request body arrived for {wait:g} s") from None
        if not more:
            raise BadMessage(400, "the client closed before the whole body")
