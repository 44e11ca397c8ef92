"""The load balancer under load: its added latency against calling a replica directly, and
its throughput, with real replicas (tests/serve/replica_app.py) and the LB as its own process.

    sudo .venv/bin/python bench/serve_load.py [--clients 20] [--seconds 20] [--replicas 2]

Phases, each against the replicas directly and then through the LB:
  1. one client, one request at a time: latency p50/p99 (the LB's own cost per request);
  2. `--clients` concurrent clients for `--seconds`: throughput, p50/p99, failed requests.
As root each replica runs in its own network namespace and binds port 8080 (as `serve` runs
replicas on one machine); otherwise each gets a free loopback port. Goal (issue 16): added
p50 latency <= 1 ms on loopback. Client, LB and replicas share this machine's cores.
Load during a rolling update and a 1 -> 3 scale-up of a real service: bench/serve_scenarios.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "tests" / "serve" / "replica_app.py"
sys.path[:0] = [str(REPO), str(REPO / "tests" / "serve")]

from lbkit import free_port, wait_healthy  # noqa: E402

from skyform.serve import sandbox  # noqa: E402
from skyform.serve.lb.config import LbConfig, ReplicaEntry, ReplicaSet, write_json_atomic  # noqa: E402


def start_replicas(stack: ExitStack, count: int, use_sandbox: bool) -> list[str]:
    urls = []
    for rid in range(1, count + 1):
        env = {**os.environ, "SKYPILOT_SERVE_REPLICA_ID": str(rid)}
        if use_sandbox:
            box = sandbox.create()
            stack.callback(sandbox.destroy, box)
            argv = box.command([sys.executable, str(APP), "8080"])
            url = f"http://{box.address}:8080"
        else:
            port = free_port()
            argv = [sys.executable, str(APP), str(port), "127.0.0.1"]
            url = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen(argv, env=env)
        stack.callback(_stop, proc)
        urls.append(url)
    return urls


def start_lb(stack: ExitStack, urls: list[str], work: Path) -> str:
    replicas = ReplicaSet(
        replicas=tuple(ReplicaEntry(url=u, replica_id=i + 1) for i, u in enumerate(urls))
    )
    write_json_atomic(work / "replicas.json", replicas)
    config = LbConfig(
        service="bench",
        port=0,
        replicas_file=str(work / "replicas.json"),
        request_log=str(work / "requests.log"),
        ports_file=str(work / "ports.json"),
    )
    write_json_atomic(work / "lb.json", config)
    proc = subprocess.Popen(
        [sys.executable, "-m", "skyform.serve.lb", str(work / "lb.json")],
        stderr=subprocess.DEVNULL,
    )
    stack.callback(_stop, proc)
    deadline = time.monotonic() + 30
    while not (work / "ports.json").exists():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit("the load balancer did not start")
        time.sleep(0.05)
    return f"http://127.0.0.1:{json.loads((work / 'ports.json').read_text())['port']}"


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def wait_ready(urls: list[str]) -> None:
    async with aiohttp.ClientSession() as http:
        for url in urls:
            await wait_healthy(http, url, timeout=30)


async def drive(targets: list[str], clients: int, seconds: float | None, requests: int | None):
    """Latencies (s) and failures; clients spread over `targets` in turn."""
    latencies: list[float] = []
    failures = 0
    sent = 0
    stop_at = time.perf_counter() + seconds if seconds else None
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def client(k: int) -> None:
            nonlocal failures, sent
            i = k
            while True:
                if stop_at is not None and time.perf_counter() >= stop_at:
                    return
                if requests is not None:
                    if sent >= requests:
                        return
                    sent += 1
                url = targets[i % len(targets)] + "/"
                i += 1
                started = time.perf_counter()
                try:
                    async with http.get(url) as resp:
                        await resp.read()
                        ok = resp.status == 200
                except aiohttp.ClientError:
                    ok = False
                latencies.append(time.perf_counter() - started)
                failures += 0 if ok else 1

        began = time.perf_counter()
        await asyncio.gather(*(client(k) for k in range(clients)))
        elapsed = time.perf_counter() - began
    return latencies, failures, elapsed


def summary(latencies: list[float], failures: int, elapsed: float) -> dict[str, float]:
    cuts = statistics.quantiles(latencies, n=100)
    return {
        "requests": len(latencies),
        "failed": failures,
        "p50_ms": round(statistics.median(latencies) * 1000, 3),
        "p99_ms": round(cuts[98] * 1000, 3),
        "throughput_rps": round(len(latencies) / elapsed, 1),
    }


async def measure(urls: list[str], endpoint: str, clients: int, seconds: float) -> dict:
    await drive(urls, 4, None, 200)  # warm connections and code paths
    await drive([endpoint], 4, None, 200)
    out: dict[str, dict] = {}
    out["sequential_direct"] = summary(*await drive(urls, 1, None, 2000))
    out["sequential_lb"] = summary(*await drive([endpoint], 1, None, 2000))
    out["concurrent_direct"] = summary(*await drive(urls, clients, seconds, None))
    out["concurrent_lb"] = summary(*await drive([endpoint], clients, seconds, None))
    for phase in ("sequential", "concurrent"):
        direct, lb = out[f"{phase}_direct"], out[f"{phase}_lb"]
        out[f"{phase}_added"] = {
            "p50_ms": round(lb["p50_ms"] - direct["p50_ms"], 3),
            "p99_ms": round(lb["p99_ms"] - direct["p99_ms"], 3),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--no-sandbox", action="store_true", help="loopback ports instead")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    use_sandbox = not args.no_sandbox and sandbox.available() is None
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        urls = start_replicas(stack, args.replicas, use_sandbox)
        endpoint = start_lb(stack, urls, Path(tmp))
        asyncio.run(wait_ready(urls))
        result = asyncio.run(measure(urls, endpoint, args.clients, args.seconds))
    result["setup"] = {
        "replicas": args.replicas,
        "clients": args.clients,
        "seconds": args.seconds,
        "sandboxes": use_sandbox,
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name, values in result.items():
            print(f"{name:18} " + "  ".join(f"{k}={v}" for k, v in values.items()))
    return 0 if result["concurrent_lb"]["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
