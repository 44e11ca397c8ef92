"""Load on a real service (`skyform serve up` on local, replicas in network namespaces)
during a rolling update, during a scale-up from 1 to 3 replicas, and while one of 3
replicas is preempted.

    sudo .venv/bin/python bench/serve_scenarios.py [--clients 20] [--seconds 40] [--only NAME]

1. rolling: 2 replicas serving; `serve update` to a changed task under `--clients` clients
   for `--seconds`: failed requests (goal 0), p50/p99, and how long the rollout took.
2. scale-up: min 1, max 3, target_qps_per_replica 5, upscale delay 5 s (decisions every
   0.5 s): `--clients` clients push the QPS over 15; time from the first request to the
   third READY replica, failed requests, p50/p99.
3. preemption: 3 replicas serving; 2 s into the load `skyform debug preempt` takes one
   replica's node away: failed requests (goal 0), p50/p99, and the time until 3 replicas
   are READY again.
4. scale-down: a burst brings 3 replicas up, then a trickle under one replica's target (one
   client, ~2 QPS) for `--seconds`: time until one replica is left after the 10 s downscale
   delay, and failed requests while the others drain (goal 0).
Probe interval 0.5 s. Client, LB, controller and replicas share this machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "tests" / "serve" / "replica_app.py"
ENV = {
    **os.environ,
    "SKYFORM_SERVE_PROBE_INTERVAL": "0.5",
    "SKYFORM_SERVE_DECISION_INTERVAL": "0.5",
    "NO_COLOR": "1",
}


def task(name: str, version: str, policy: str) -> str:
    return f"""\
name: {name}
service:
  readiness_probe: {{path: /health, initial_delay_seconds: 60, timeout_seconds: 2}}
{policy}
resources: {{infra: local, ports: 8080}}
envs: {{APP_VERSION: "{version}"}}
run: exec {sys.executable} {APP} 8080
"""


def skyform(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "skyform.cli.main", *args],
        capture_output=True, text=True, env=ENV, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"skyform {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def record(name: str) -> dict:
    return json.loads(skyform("serve", "status", name, "--json"))[0]


def ready(name: str) -> list[int]:
    return [r["version"] for r in record(name)["replicas"] if r["status"] == "READY"]


def wait(check, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        time.sleep(0.3)


async def load(url: str, clients: int, seconds: float, during=None, pause: float = 0.0) -> dict:
    latencies: list[float] = []
    failed = 0
    stop = time.perf_counter() + seconds
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:

        async def client() -> None:
            nonlocal failed
            while time.perf_counter() < stop:
                started = time.perf_counter()
                try:
                    async with http.get(url) as resp:
                        await resp.read()
                        failed += resp.status != 200
                except aiohttp.ClientError:
                    failed += 1
                latencies.append(time.perf_counter() - started)
                if pause:
                    await asyncio.sleep(pause)  # a light load: about clients / pause QPS

        extra = [asyncio.to_thread(during)] if during else []
        await asyncio.gather(*(client() for _ in range(clients)), *extra)
    cuts = statistics.quantiles(latencies, n=100)
    return {
        "requests": len(latencies),
        "failed": failed,
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(cuts[98] * 1000, 2),
        "rps": round(len(latencies) / seconds, 1),
    }


def rolling(work: Path, clients: int, seconds: float) -> dict:
    v1, v2 = work / "roll.yaml", work / "roll-v2.yaml"
    v1.write_text(task("benchroll", "1", "  replicas: 2"))
    v2.write_text(task("benchroll", "2", "  replicas: 2"))
    skyform("serve", "up", str(v1), "-y")
    try:
        wait(lambda: ready("benchroll") == [1, 1])
        url = record("benchroll")["endpoint"] + "/echo"
        timing: dict[str, float] = {}

        def update() -> None:
            time.sleep(2)
            began = time.monotonic()
            skyform("serve", "update", "benchroll", str(v2), "-y")
            wait(lambda: [r["version"] for r in record("benchroll")["replicas"]] == [2, 2]
                 and ready("benchroll") == [2, 2])  # fmt: skip
            timing["rollout_s"] = round(time.monotonic() - began, 1)

        out = asyncio.run(load(url, clients, seconds, update))
        return {**out, **timing}
    finally:
        skyform("serve", "down", "benchroll", "-y")


def one_to_three(downscale_delay: int) -> str:
    """Autoscaling between 1 and 3 replicas at 5 QPS each, scaling up after 5 s."""
    return (
        "  replica_policy: {min_replicas: 1, max_replicas: 3, target_qps_per_replica: 5,\n"
        f"                   upscale_delay_seconds: 5, downscale_delay_seconds: {downscale_delay}}}"
    )


def scale_up(work: Path, clients: int, seconds: float) -> dict:
    policy = one_to_three(downscale_delay=600)
    path = work / "scale.yaml"
    path.write_text(task("benchscale", "1", policy))
    skyform("serve", "up", str(path), "-y")
    try:
        wait(lambda: len(ready("benchscale")) == 1)
        url = record("benchscale")["endpoint"] + "/echo"
        timing: dict[str, float] = {}
        began = time.monotonic()

        def watch() -> None:
            wait(lambda: len(ready("benchscale")) == 3, timeout=seconds)
            timing["third_ready_s"] = round(time.monotonic() - began, 1)

        out = asyncio.run(load(url, clients, seconds, watch))
        return {**out, **timing}
    finally:
        skyform("serve", "down", "benchscale", "-y")


def scale_down(work: Path, clients: int, seconds: float) -> dict:
    """3 replicas after a burst, then a trickle (~2 QPS, under one replica's target): time
    until only min_replicas are left after the downscale delay, and no request fails while
    the two surplus replicas drain."""
    policy = one_to_three(downscale_delay=10)
    path = work / "down.yaml"
    path.write_text(task("benchdown", "1", policy))
    skyform("serve", "up", str(path), "-y")
    try:
        wait(lambda: len(ready("benchdown")) == 1)
        url = record("benchdown")["endpoint"] + "/echo"
        burst_over = threading.Event()

        def until_three() -> None:
            wait(lambda: len(ready("benchdown")) == 3, timeout=seconds)
            burst_over.set()

        async def burst() -> None:
            task = asyncio.ensure_future(load(url, clients, seconds, until_three))
            while not burst_over.is_set() and not task.done():
                await asyncio.sleep(0.2)
            task.cancel()

        asyncio.run(burst())
        timing: dict[str, float] = {}
        began = time.monotonic()

        def watch() -> None:
            # the QPS window (60 s) must forget the burst first, then the 10 s delay runs
            wait(lambda: len(record("benchdown")["replicas"]) == 1, timeout=seconds + 120)
            timing["back_to_one_s"] = round(time.monotonic() - began, 1)

        out = asyncio.run(load(url, 1, seconds + 120, watch, pause=0.5))
        return {**out, **timing}
    finally:
        skyform("serve", "down", "benchdown", "-y")


def preemption(work: Path, clients: int, seconds: float) -> dict:
    path = work / "spot.yaml"
    path.write_text(task("benchspot", "1", "  replicas: 3"))
    skyform("serve", "up", str(path), "-y")
    try:
        wait(lambda: len(ready("benchspot")) == 3)
        first = record("benchspot")
        url = first["endpoint"] + "/echo"
        victim = max(first["replicas"], key=lambda r: r["replica_id"])
        timing: dict[str, float] = {}

        def preempt() -> None:
            time.sleep(2)
            began = time.monotonic()
            skyform("debug", "preempt", victim["cluster"])

            def healed() -> bool:
                now = record("benchspot")["replicas"]
                ids = {r["replica_id"] for r in now if r["status"] == "READY"}
                return len(ids) == 3 and victim["replica_id"] not in ids

            wait(healed, timeout=seconds)
            timing["three_ready_again_s"] = round(time.monotonic() - began, 1)

        out = asyncio.run(load(url, clients, seconds, preempt))
        return {**out, **timing}
    finally:
        skyform("serve", "down", "benchspot", "-y")


SCENARIOS = {
    "rolling_update": rolling,
    "scale_up_1_to_3": scale_up,
    "preempt_1_of_3": preemption,
    "scale_down_3_to_1": scale_down,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--only", choices=sorted(SCENARIOS), action="append", help="repeatable")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ENV["SKYFORM_HOME"] = str(work / "home")
        results = {
            name: run(work, args.clients, args.seconds)
            for name, run in SCENARIOS.items()
            if not args.only or name in args.only
        }
    for name, values in results.items():
        print(f"{name:16} " + "  ".join(f"{k}={v}" for k, v in values.items()))
    return 0 if all(v["failed"] == 0 for v in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
