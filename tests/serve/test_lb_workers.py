"""The LB process with several worker processes on one port (`workers` in its config):
the requests are spread over them, and what the autoscaler and `/metrics` count is exact;
a replica set pushed on the control port holds in every worker once the push is answered;
token streams still arrive as they are produced."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
from lbkit import lb_files, replica_set, replicas

from skyform.serve.lb.requestlog import read_counts

WORKERS = 3


@asynccontextmanager
async def lb_process(tmp_path: Path, urls: list[str]) -> AsyncIterator[tuple[int, int]]:
    """`python -m skyform.serve.lb` with WORKERS workers; yields (port, control port)."""
    config = lb_files(tmp_path, urls, request_log=str(tmp_path / "requests.log"), workers=WORKERS)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "skyform.serve.lb", str(config)
    )
    try:
        deadline = time.monotonic() + 20
        while not (tmp_path / "ports.json").exists():
            assert time.monotonic() < deadline and proc.returncode is None
            await asyncio.sleep(0.05)
        ports = json.loads((tmp_path / "ports.json").read_text())
        yield ports["port"], ports["control_port"]
        os.kill(proc.pid, signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 15) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def one_request(port: int, path: str = "/echo") -> str:
    """A request on a connection of its own (the kernel picks a worker per connection)."""
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http,
        http.get(f"http://127.0.0.1:{port}{path}") as resp,
    ):
        assert resp.status == 200
        return resp.headers.get("X-Replica") or (await resp.text()).split()[-1]


def counter(metrics: str, name: str) -> dict[str, float]:
    """{labels: value} of one metric in the exposition text."""
    return {
        m.group(1): float(m.group(2))
        for m in re.finditer(rf"^{name}\{{([^}}]*)\}} (\S+)$", metrics, re.MULTILINE)
    }


def test_requests_spread_over_workers_are_all_counted_once(tmp_path: Path):
    sent = 120

    async def scenario() -> str:
        async with replicas(2) as urls, lb_process(tmp_path, urls) as (port, control):
            answers = await asyncio.gather(*(one_request(port) for _ in range(sent)))
            assert sorted(set(answers)) == ["1", "2"]
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"http://127.0.0.1:{control}/metrics") as resp,
            ):
                return await resp.text()

    metrics = asyncio.run(scenario())
    codes = counter(metrics, "skyform_lb_requests_total")
    assert codes == {'service="svc",code="200"': sent}
    assert sum(counter(metrics, "skyform_lb_replica_requests_total").values()) == sent
    assert counter(metrics, "skyform_lb_request_duration_seconds_count") == {'service="svc"': sent}
    by_worker = counter(metrics, "skyform_lb_worker_requests_total")
    assert len(by_worker) == WORKERS and sum(by_worker.values()) == sent
    assert sum(1 for n in by_worker.values() if n > 0) >= 2  # more than one process served
    # the autoscaler's log: every request once, written by the first process at its stop
    assert sum(n for _, n in read_counts(tmp_path / "requests.log")) == sent


def test_a_removed_replica_gets_no_request_from_any_worker_once_the_push_is_answered(
    tmp_path: Path,
):
    async def scenario() -> list[str]:
        async with replicas(2) as urls, lb_process(tmp_path, urls) as (port, control):
            first = await asyncio.gather(*(one_request(port) for _ in range(30)))
            assert sorted(set(first)) == ["1", "2"]
            only_second = replica_set(urls).model_copy(
                update={"replicas": replica_set(urls).replicas[1:]}
            )
            async with (
                aiohttp.ClientSession() as http,
                http.put(
                    f"http://127.0.0.1:{control}/-/replicas",
                    data=only_second.model_dump_json(),
                ) as resp,
            ):
                assert resp.status == 200
            return await asyncio.gather(*(one_request(port) for _ in range(60)))

    assert set(asyncio.run(scenario())) == {"2"}


def test_a_token_stream_through_the_workers_arrives_as_it_is_produced(tmp_path: Path):
    async def scenario() -> list[float]:
        async with replicas(1) as urls, lb_process(tmp_path, urls) as (port, _control):
            arrivals = []
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"http://127.0.0.1:{port}/stream?n=4&gap=0.3") as resp,
            ):
                started = time.perf_counter()
                async for line in resp.content:
                    if line.startswith(b"data:"):
                        arrivals.append(time.perf_counter() - started)
            return arrivals

    arrivals = asyncio.run(scenario())
    assert len(arrivals) == 5
    assert arrivals[0] < 0.25 and arrivals[3] > 0.8  # one by one, not all at the end


def test_a_sigterm_lets_a_request_in_flight_finish_and_a_kill_leaves_no_worker(tmp_path: Path):
    async def scenario() -> tuple[int, str, bool]:
        async with replicas(1) as urls:
            config = lb_files(tmp_path, urls, workers=WORKERS)
            argv = [sys.executable, "-m", "skyform.serve.lb", str(config)]
            proc = await asyncio.create_subprocess_exec(*argv)
            try:
                while not (tmp_path / "ports.json").exists():
                    await asyncio.sleep(0.05)
                port = json.loads((tmp_path / "ports.json").read_text())["port"]
                # one slow request on each of a few connections: whichever worker holds it
                slow = [asyncio.create_task(one_request(port, "/sleep?s=1.5")) for _ in range(4)]
                await asyncio.sleep(0.5)
                os.kill(proc.pid, signal.SIGTERM)
                answers = await asyncio.gather(*slow)
                code = await asyncio.wait_for(proc.wait(), 15)
            finally:
                if proc.returncode is None:
                    proc.kill()
            # a second LB, killed for good: its workers go with it
            (tmp_path / "ports.json").unlink()
            proc = await asyncio.create_subprocess_exec(*argv)
            while not (tmp_path / "ports.json").exists():
                await asyncio.sleep(0.05)
            port = json.loads((tmp_path / "ports.json").read_text())["port"]
            await one_request(port)
            proc.kill()
            await proc.wait()
            deadline = time.monotonic() + 5
            served = True
            while served and time.monotonic() < deadline:
                try:
                    await one_request(port)
                    await asyncio.sleep(0.1)
                except (aiohttp.ClientError, OSError):
                    served = False
            return code, ",".join(sorted(set(answers))), served

    code, answered_by, still_served = asyncio.run(scenario())
    assert code == 0 and answered_by == "1"  # every slow request got its answer
    assert not still_served  # no worker outlived the kill -9


def test_a_load_balancer_whose_service_folder_is_gone_stops_with_its_workers(tmp_path: Path):
    """It outlives its controller (for an adopter), not its service: the folder of its
    replica set removed (the service taken down, or its SKYFORM_HOME deleted), it exits
    and no worker keeps the port."""
    folder = tmp_path / "svc"
    folder.mkdir()

    async def scenario() -> tuple[int | None, bool]:
        async with replicas(1) as urls:
            config = lb_files(folder, urls, workers=WORKERS)
            # the config is read at start; a copy outside the folder, as an LB started
            # from elsewhere would have it
            kept = tmp_path / "lb.json"
            kept.write_bytes(config.read_bytes())
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "skyform.serve.lb", str(kept)
            )
            try:
                while not (folder / "ports.json").exists():
                    await asyncio.sleep(0.05)
                port = json.loads((folder / "ports.json").read_text())["port"]
                await one_request(port)
                for path in folder.iterdir():
                    path.unlink()
                folder.rmdir()
                code = await asyncio.wait_for(proc.wait(), 15)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
            try:
                await one_request(port)
                served = True
            except (aiohttp.ClientError, OSError):
                served = False
            return code, served

    code, still_served = asyncio.run(scenario())
    assert code == 0 and not still_served
