"""Two replicas on this machine bind the same port, each in its own network namespace, and
1,000 requests through the load balancer all succeed, served by both."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import aiohttp
import pytest
from lbkit import balancer, wait_healthy

from skyform.serve import sandbox

pytestmark = [
    pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
    pytest.mark.usefixtures("serve_tests_exclusive"),
]


APP = Path(__file__).parent / "replica_app.py"


@pytest.fixture
def two_sandboxes():
    boxes = [sandbox.create(), sandbox.create()]
    procs = []
    try:
        for rid, box in enumerate(boxes, start=1):
            env = {**os.environ, "SKYPILOT_SERVE_REPLICA_ID": str(rid)}
            # the same port in both: what a task file's `run: server --port 8080` does
            procs.append(subprocess.Popen(box.command([sys.executable, str(APP), "8080"]), env=env))
        yield boxes
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        for box in boxes:
            sandbox.destroy(box)
        assert not {b.index for b in boxes} & sandbox.existing()


def test_two_replicas_on_port_8080_serve_1000_requests(two_sandboxes):
    urls = [f"http://{box.address}:8080" for box in two_sandboxes]
    assert len(set(urls)) == 2

    async def scenario():
        async with aiohttp.ClientSession() as http:
            for url in urls:
                await wait_healthy(http, url)
            async with balancer(urls, policy="round_robin") as lb:
                endpoint = f"http://127.0.0.1:{lb.port}/echo"
                answered: Counter[str] = Counter()
                statuses: Counter[int] = Counter()
                queue = iter(range(1000))

                async def client():
                    for _ in queue:
                        async with http.post(endpoint, data=b"x") as resp:
                            statuses[resp.status] += 1
                            answered[resp.headers["X-Replica"]] += 1
                            await resp.read()

                await asyncio.gather(*(client() for _ in range(20)))
                return statuses, answered

    statuses, answered = asyncio.run(scenario())
    assert statuses == {200: 1000}
    assert answered == {"1": 500, "2": 500}
