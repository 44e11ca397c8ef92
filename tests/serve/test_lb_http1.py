"""The LB's own HTTP/1.1 against what clients and replicas really send: pipelined requests,
HTTP/1.0 clients, chunked uploads, answers that end with the connection, and replicas that
close idle keep-alive connections."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from lbkit import balancer, replicas


def run(coro):
    return asyncio.run(coro)


async def exchange(port: int, data: bytes, timeout: float = 5) -> bytes:
    """Send raw bytes, read until the LB closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()


def test_pipelined_requests_are_answered_in_order_on_one_connection():
    async def scenario() -> bytes:
        async with replicas(1) as urls, balancer(urls) as lb:
            one = b"GET /echo?n=1 HTTP/1.1\r\nHost: x\r\n\r\n"
            two = b"POST /echo?n=2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
            last = b"GET /echo?n=3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            return await exchange(lb.port, one + two + last)

    answer = run(scenario())
    assert answer.count(b"HTTP/1.1 200") == 3
    bodies = [json.loads(part.split(b"\r\n\r\n", 1)[1]) for part in _responses(answer)]
    assert [b["raw_path"] for b in bodies] == ["/echo?n=1", "/echo?n=2", "/echo?n=3"]
    assert base64.b64decode(bodies[1]["body"]) == b"abc"


def _responses(data: bytes) -> list[bytes]:
    """Split Content-Length framed responses."""
    out = []
    while data:
        head, rest = data.split(b"\r\n\r\n", 1)
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        out.append(head + b"\r\n\r\n" + rest[:length])
        data = rest[length:]
    return out


def test_an_http10_client_gets_a_chunked_replica_answer_as_plain_bytes_then_the_close():
    async def scenario() -> bytes:
        async with replicas(1) as urls, balancer(urls) as lb:
            return await exchange(lb.port, b"GET /big?kb=64 HTTP/1.0\r\n\r\n")

    answer = run(scenario())
    head, body = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200")
    assert b"transfer-encoding" not in head.lower()
    assert body == b"x" * 64 * 1024


def test_a_chunked_upload_reaches_the_replica_whole():
    async def scenario() -> bytes:
        async with replicas(1) as urls, balancer(urls) as lb:
            chunks = b"5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\n\r\n"
            head = b"PUT /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            return await exchange(lb.port, head + b"Connection: close\r\n\r\n" + chunks)

    answer = run(scenario())
    seen = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert base64.b64decode(seen["body"]) == b"hello world"
    headers = {k.lower(): v for k, v in seen["headers"]}
    assert headers["content-length"] == "11" and "transfer-encoding" not in headers


@asynccontextmanager
async def raw_replica(answer: bytes, close_after: float | None) -> AsyncIterator[tuple[str, list]]:
    """A replica that answers every request with `answer`; it closes the connection right
    after (`close_after` 0), after that many seconds, or never (None). Yields its URL and
    the connections it accepted."""
    accepted: list = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(answer)
                await writer.drain()
                if close_after is not None:
                    await asyncio.sleep(close_after)
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", accepted
    finally:
        server.close()


def test_an_answer_that_ends_with_the_replicas_close_reaches_the_client_chunked():
    async def scenario() -> bytes:
        answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end"
        async with raw_replica(answer, 0) as (url, _), balancer([url]) as lb:
            return await exchange(
                lb.port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )

    head, body = run(scenario()).split(b"\r\n\r\n", 1)
    assert b"transfer-encoding: chunked" in head.lower()
    assert body == b"d\r\nuntil the end\r\n0\r\n\r\n"


def test_replica_connections_are_reused_and_one_it_closed_while_idle_is_not():
    async def scenario() -> tuple[list[int], int]:
        answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        async with raw_replica(answer, None) as (url, accepted), balancer([url]) as lb:
            statuses = []
            for _ in range(5):
                reply = await exchange(
                    lb.port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                )
                statuses.append(int(reply.split()[1]))
            reused = len(accepted)
            for writer in accepted:  # the replica drops its idle keep-alive connections
                writer.close()
            await asyncio.sleep(0.2)
            reply = await exchange(
                lb.port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            statuses.append(int(reply.split()[1]))
            return statuses, reused

    statuses, connections = run(scenario())
    assert statuses == [200] * 6
    assert connections == 1  # five requests, one connection to the replica
