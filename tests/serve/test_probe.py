"""Readiness probes against a real replica: only HTTP 200 within the timeout passes."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from lbkit import dead_port, replicas

from skyform.serve.probe import probe, probe_request
from skyform.spec.service_models import ReadinessProbe


def run(coro):
    return asyncio.run(coro)


def test_probe_passes_on_200_and_fails_when_the_app_says_so():
    async def scenario():
        async with replicas(1) as urls, aiohttp.ClientSession() as http:
            request = probe_request(ReadinessProbe(path="/health"), urls[0])
            assert request.method == "GET" and request.url == urls[0] + "/health"
            first = await probe(http, request)
            await http.post(urls[0] + "/-/fail")
            second = await probe(http, request)
            return first, second

    assert run(scenario()) == (True, False)


def test_post_data_makes_a_post_with_that_json_and_the_headers():
    spec = ReadinessProbe(path="/echo", post_data={"model": "m"}, headers={"X-Key": "k"})

    async def scenario():
        async with replicas(1) as urls, aiohttp.ClientSession() as http:
            request = probe_request(spec, urls[0])
            assert (request.method, request.json_body) == ("POST", {"model": "m"})
            assert request.headers == {"X-Key": "k"}
            return await probe(http, request)

    assert run(scenario()) is True


def test_anything_but_200_fails_a_probe():
    async def scenario():
        async with replicas(1) as urls, aiohttp.ClientSession() as http:
            outcomes = [
                await probe(http, probe_request(ReadinessProbe(path=p), urls[0]))
                for p in ("/status/204", "/status/302", "/status/500")
            ]
            started = time.perf_counter()
            slow = ReadinessProbe(path="/sleep?s=3", timeout_seconds=0.3)
            outcomes.append(await probe(http, probe_request(slow, urls[0])))
            assert time.perf_counter() - started < 2
            dead = f"http://127.0.0.1:{await dead_port()}"
            outcomes.append(await probe(http, probe_request(ReadinessProbe(), dead)))
            return outcomes

    assert run(scenario()) == [False] * 5
