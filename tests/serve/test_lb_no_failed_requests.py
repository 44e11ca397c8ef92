"""Beyond SkyPilot: under steady load (20 clients), no request fails when one of three
replicas dies before anyone removed it (connection failures are retried on another replica),
nor while the replica set rolls to new replicas (removed ones drain)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import aiohttp
from lbkit import balancer, free_port, replica_set, wait_healthy

APP = Path(__file__).parent / "replica_app.py"


def start(rid: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "SKYPILOT_SERVE_REPLICA_ID": str(rid)}
    proc = subprocess.Popen([sys.executable, str(APP), str(port), "127.0.0.1"], env=env)
    return proc, f"http://127.0.0.1:{port}"


async def load(endpoint: str, seconds: float, during) -> tuple[Counter, Counter]:
    statuses: Counter = Counter()
    replicas: Counter = Counter()
    stop_at = time.monotonic() + seconds
    async with aiohttp.ClientSession() as http:

        async def client() -> None:
            while time.monotonic() < stop_at:
                try:
                    async with http.get(endpoint + "/echo") as resp:
                        await resp.read()
                        statuses[resp.status] += 1
                        replicas[resp.headers.get("X-Replica")] += 1
                except aiohttp.ClientError as exc:
                    statuses[type(exc).__name__] += 1

        await asyncio.gather(*(client() for _ in range(20)), during())
    return statuses, replicas


def test_one_of_three_replicas_killed_under_load_fails_no_request():
    procs = [start(rid) for rid in (1, 2, 3)]
    try:

        async def scenario():
            async with aiohttp.ClientSession() as http:
                for _, url in procs:
                    await wait_healthy(http, url)
            async with balancer([u for _, u in procs]) as lb:

                async def preempt() -> None:
                    await asyncio.sleep(1.0)
                    procs[1][0].send_signal(signal.SIGKILL)  # like a reclaimed spot VM

                return await load(f"http://127.0.0.1:{lb.port}", 3.0, preempt), lb

        (statuses, replicas), lb = asyncio.run(scenario())
    finally:
        for proc, _ in procs:
            proc.kill()
            proc.wait()
    assert set(statuses) == {200} and statuses[200] > 300
    assert replicas["2"] > 0 and replicas["1"] > replicas["2"]  # it served until killed
    assert lb.proxy.metrics.retries > 0


def test_replacing_every_replica_under_load_fails_no_request():
    old = [start(rid) for rid in (1, 2)]
    new = [start(rid) for rid in (3, 4)]
    everything = old + new
    try:

        async def scenario():
            async with aiohttp.ClientSession() as http:
                for _, url in everything:
                    await wait_healthy(http, url)
            async with balancer([u for _, u in old]) as lb:

                async def roll() -> None:
                    await asyncio.sleep(0.8)
                    lb.proxy.set_replicas(replica_set([old[1][1], new[0][1]]))
                    await asyncio.sleep(0.8)
                    lb.proxy.set_replicas(replica_set([new[0][1], new[1][1]]))
                    # the controller stops old replicas once the LB says they drained
                    while lb.proxy.draining:
                        await asyncio.sleep(0.01)
                    for proc, _ in old:
                        proc.send_signal(signal.SIGTERM)

                return await load(f"http://127.0.0.1:{lb.port}", 3.0, roll)

        statuses, replicas = asyncio.run(scenario())
    finally:
        for proc, _ in everything:
            proc.kill()
            proc.wait()
    assert set(statuses) == {200}
    assert all(replicas[r] > 0 for r in ("1", "2", "3", "4"))
