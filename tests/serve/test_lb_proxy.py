"""The load balancer against real aiohttp replicas on loopback: what a client of the
service endpoint sees (bodies, headers, streams, status codes, which replica answered)."""

from __future__ import annotations

import asyncio
import base64
import socket
import struct
import time

import aiohttp
from lbkit import balancer, dead_port, hangup_server, replicas


def run(coro):
    return asyncio.run(coro)


def test_every_method_path_header_and_body_reach_the_replica_unchanged():
    async def scenario():
        async with replicas(1) as urls, balancer(urls) as lb, aiohttp.ClientSession() as http:
            body = bytes(range(256)) * 10
            for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
                async with http.request(
                    method,
                    f"http://127.0.0.1:{lb.port}/echo?a=1&b=%20x",
                    data=None if method == "GET" else body,
                    headers={
                        "X-Custom": "kept",
                        "Authorization": "Bearer t",
                        "Connection": "keep-alive, X-Drop-Me",
                        "X-Drop-Me": "hop",
                        "TE": "trailers",
                        "Content-Type": "application/x-thing",
                    },
                ) as resp:
                    assert resp.status == 200
                    assert resp.headers["X-Replica"] == "1"
                    assert resp.headers["Set-Cookie"] == "a=1"
                    seen = await resp.json()
                headers = {k.lower(): v for k, v in seen["headers"]}
                assert seen["method"] == method
                assert seen["raw_path"] == "/echo?a=1&b=%20x"
                assert headers["x-custom"] == "kept" and headers["authorization"] == "Bearer t"
                assert headers["content-type"] == "application/x-thing"
                assert "x-drop-me" not in headers and "te" not in headers
                assert headers["x-forwarded-for"] == "127.0.0.1"
                assert headers["host"] == f"127.0.0.1:{lb.port}"
                sent = b"" if method == "GET" else body
                assert base64.b64decode(seen["body"]) == sent

    run(scenario())


def test_server_sent_events_arrive_as_they_are_produced():
    async def scenario():
        async with replicas(1) as urls, balancer(urls) as lb, aiohttp.ClientSession() as http:
            started = time.perf_counter()
            arrivals = []
            async with http.get(f"http://127.0.0.1:{lb.port}/stream?n=4&gap=0.3") as resp:
                assert resp.headers["Content-Type"] == "text/event-stream"
                async for line in resp.content:
                    if line.startswith(b"data:"):
                        arrivals.append((time.perf_counter() - started, line.strip()))
            assert [a[1] for a in arrivals][-1] == b"data: [DONE]"
            assert len(arrivals) == 5
            assert arrivals[0][0] < 0.25  # the first token long before the stream ends
            assert arrivals[-1][0] >= 1.1

    run(scenario())


def test_a_large_chunked_body_comes_back_whole():
    async def scenario():
        async with replicas(1) as urls, balancer(urls) as lb, aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{lb.port}/big?kb=8192") as resp:
                data = await resp.read()
            assert resp.status == 200 and len(data) == 8192 * 1024 and set(data) == {ord("x")}

    run(scenario())


def test_no_ready_replica_is_503_and_still_counted_for_the_autoscaler(tmp_path):
    log = tmp_path / "requests.log"

    async def scenario():
        async with balancer([], request_log=str(log)) as lb, aiohttp.ClientSession() as http:
            for _ in range(3):
                async with http.get(f"http://127.0.0.1:{lb.port}/") as resp:
                    assert resp.status == 503
                    assert "No ready replicas" in (await resp.json())["error"]

    run(scenario())
    assert sum(int(line.split()[1]) for line in log.read_text().splitlines()) == 3


def test_connection_failures_are_retried_on_another_replica():
    async def scenario():
        dead = f"http://127.0.0.1:{await dead_port()}"
        async with (
            hangup_server() as hang,
            replicas(1) as urls,
            balancer([dead, f"http://127.0.0.1:{hang}", urls[0]], policy="round_robin") as lb,
            aiohttp.ClientSession() as http,
        ):
            for _ in range(12):
                async with http.post(f"http://127.0.0.1:{lb.port}/echo", data=b"once") as resp:
                    assert resp.status == 200
                    assert base64.b64decode((await resp.json())["body"]) == b"once"
            assert lb.proxy.metrics.retries >= 8

    run(scenario())


def test_when_no_replica_can_be_reached_the_client_gets_502():
    async def scenario():
        dead = [f"http://127.0.0.1:{await dead_port()}" for _ in range(2)]
        async with (
            balancer(dead) as lb,
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{lb.port}/") as resp,
        ):
            assert resp.status == 502

    run(scenario())


def test_replica_errors_pass_through_and_are_not_retried():
    async def scenario():
        async with (
            replicas(2) as urls,
            balancer(urls, policy="round_robin") as lb,
            aiohttp.ClientSession() as http,
        ):
            async with http.get(f"http://127.0.0.1:{lb.port}/status/500") as resp:
                assert resp.status == 500 and await resp.text() == "as asked"
            async with http.get(f"http://127.0.0.1:{lb.port}/status/404") as resp:
                assert resp.status == 404
            assert lb.proxy.metrics.retries == 0
            assert sorted(lb.proxy.metrics.by_replica.values()) == [1, 1]

    run(scenario())


def test_a_replica_that_goes_quiet_is_a_504():
    async def scenario():
        async with (
            replicas(1) as urls,
            balancer(urls, read_timeout_seconds=0.3) as lb,
            aiohttp.ClientSession() as http,
        ):
            started = time.perf_counter()
            async with http.get(f"http://127.0.0.1:{lb.port}/sleep?s=3") as resp:
                assert resp.status == 504
            assert time.perf_counter() - started < 2

    run(scenario())


def test_a_client_that_hangs_up_mid_stream_frees_its_replica_slot():
    async def scenario():
        async with replicas(1) as urls, balancer(urls) as lb:
            async with aiohttp.ClientSession() as http:
                resp = await http.get(f"http://127.0.0.1:{lb.port}/stream?n=100&gap=0.02")
                await resp.content.readline()
                assert lb.proxy.inflight == {urls[0]: 1}
                resp.close()
            deadline = time.monotonic() + 5
            while lb.proxy.inflight and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert lb.proxy.inflight == {}

    run(scenario())


def test_a_client_that_hangs_up_before_the_answer_is_counted_and_not_retried():
    """nginx's 499: the request ends when its client leaves, its replica slot is freed at
    once, and it is not sent to another replica (the first may be working on it)."""

    async def scenario():
        async with replicas(2) as urls, balancer(urls) as lb:
            _, writer = await asyncio.open_connection("127.0.0.1", lb.port)
            writer.write(b"GET /sleep?s=2 HTTP/1.1\r\nHost: x\r\n\r\n")
            await writer.drain()
            deadline = time.monotonic() + 5
            while not lb.proxy.inflight and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert sum(lb.proxy.inflight.values()) == 1
            # gone, not half-closed (a half-closed client still gets its answer): a reset
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.close()
            left = time.monotonic()
            while lb.proxy.inflight and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert lb.proxy.inflight == {} and time.monotonic() - left < 1
            assert dict(lb.proxy.metrics.by_code) == {499: 1}
            assert lb.proxy.metrics.retries == 0

    run(scenario())
