"""Clients that send nothing do not hold the load balancer's connections: raw sockets against
a running LB with short timeouts (nginx's client_header_timeout, keepalive_timeout and
client_body_timeout), and a client that reads a long stream is never cut."""

from __future__ import annotations

import asyncio
import base64
import time

import aiohttp
from lbkit import balancer, replicas

SHORT = {
    "header_timeout_seconds": 0.5,
    "keepalive_timeout_seconds": 0.8,
    "body_timeout_seconds": 0.5,
}


def run(coro):
    return asyncio.run(coro)


async def _closed_after(reader: asyncio.StreamReader, within: float) -> tuple[float, bytes]:
    """Seconds until the LB closed the connection (EOF), and what it sent before that."""
    started = time.perf_counter()
    data = b""
    while True:
        try:
            chunk = await asyncio.wait_for(reader.read(4096), within)
        except ConnectionError:  # closed while this side was still writing
            chunk = b""
        if not chunk:
            return time.perf_counter() - started, data
        data += chunk


async def _open(lb):
    return await asyncio.open_connection("127.0.0.1", lb.port)


def test_a_client_that_sends_nothing_is_closed_after_the_header_timeout():
    async def scenario():
        async with replicas(1) as urls, balancer(urls, **SHORT) as lb:
            reader, writer = await _open(lb)
            await asyncio.sleep(0.3)
            assert not reader.at_eof()  # not before its time
            waited, sent = await _closed_after(reader, within=5)
            assert 0.1 <= waited < 2.0 and sent == b""
            writer.close()

    run(scenario())


def test_a_partial_request_line_or_headers_that_stall_are_closed():
    async def scenario():
        async with replicas(1) as urls, balancer(urls, **SHORT) as lb:
            for partial in (b"GET /echo HT", b"GET /echo HTTP/1.1\r\nHost: x\r\nX-Slow: a"):
                reader, writer = await _open(lb)
                writer.write(partial)
                await writer.drain()
                waited, _ = await _closed_after(reader, within=5)
                assert waited < 2.0
                writer.close()
            # a client trickling its headers one byte at a time is no better off
            reader, writer = await _open(lb)
            started = time.perf_counter()
            request = b"GET /echo HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 200
            try:
                for byte in request:
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(0.05)
            except ConnectionError:
                pass
            await _closed_after(reader, within=5)
            assert time.perf_counter() - started < 3.0
            writer.close()

    run(scenario())


def test_an_idle_keep_alive_connection_is_closed_and_an_active_one_is_not():
    async def scenario():
        async with replicas(1) as urls, balancer(urls, **SHORT) as lb:
            reader, writer = await _open(lb)
            request = b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n"
            for _ in range(6):  # 6 requests 0.3 s apart: longer than every timeout in all
                writer.write(request)
                await writer.drain()
                status = await asyncio.wait_for(reader.readline(), 5)
                assert status.startswith(b"HTTP/1.1 200")
                headers = await reader.readuntil(b"\r\n\r\n")
                length = int(headers.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                await asyncio.sleep(0.3)
            waited, _ = await _closed_after(reader, within=5)
            assert waited < 2.0  # 0.8 s keep-alive idle after the last answer
            writer.close()

    run(scenario())


def test_a_body_that_stalls_is_a_408_and_a_slow_body_that_keeps_coming_goes_through():
    async def scenario():
        async with replicas(1) as urls, balancer(urls, **SHORT) as lb:
            reader, writer = await _open(lb)
            head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
            writer.write(head + b"0123456789")
            await writer.drain()
            waited, answer = await _closed_after(reader, within=5)
            assert answer.startswith(b"HTTP/1.1 408"), answer
            assert waited < 2.5
            writer.close()

            reader, writer = await _open(lb)
            body = b"x" * 12
            writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n")
            for byte in body:  # 12 bytes 0.2 s apart: 2.4 s in all, never 0.5 s quiet
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.2)
            status = await asyncio.wait_for(reader.readline(), 5)
            assert status.startswith(b"HTTP/1.1 200"), status
            writer.close()

    run(scenario())


def test_a_stream_longer_than_every_timeout_reaches_a_client_that_reads_it():
    async def scenario():
        async with (
            replicas(1) as urls,
            balancer(urls, **SHORT) as lb,
            aiohttp.ClientSession() as http,
        ):
            tokens = []
            started = time.perf_counter()
            async with http.get(f"http://127.0.0.1:{lb.port}/stream?n=8&gap=0.3") as resp:
                async for line in resp.content:
                    if line.startswith(b"data:"):
                        tokens.append(line.strip())
            assert time.perf_counter() - started > 2.0
            assert tokens[-1] == b"data: [DONE]" and len(tokens) == 9
            # and a long upload answered slowly: the replica's wait is not the client's idle
            async with http.post(f"http://127.0.0.1:{lb.port}/echo", data=b"y" * 3_000_000) as resp:
                assert resp.status == 200
                assert len(base64.b64decode((await resp.json())["body"])) == 3_000_000
            async with http.get(f"http://127.0.0.1:{lb.port}/sleep?s=1.5") as resp:
                assert resp.status == 200

    run(scenario())
