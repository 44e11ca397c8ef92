"""The LB's control side: live replica sets (endpoint and file), draining, metrics, TLS, and
the LB as its own process (`python -m skyform.serve.lb`)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
from lbkit import balancer, lb_files, replica_set, replicas

from skyform.serve.lb.config import write_json_atomic
from skyform.serve.lb.requestlog import RequestLog, read_counts


def run(coro):
    return asyncio.run(coro)


async def who(http: aiohttp.ClientSession, port: int, path: str = "/echo") -> str:
    async with http.get(f"http://127.0.0.1:{port}{path}") as resp:
        assert resp.status == 200
        return resp.headers.get("X-Replica") or (await resp.text()).split()[-1]


def test_replica_set_changes_live_and_a_removed_replica_drains():
    async def scenario():
        async with replicas(2) as urls, balancer(urls[:1]) as lb, aiohttp.ClientSession() as http:
            control = f"http://127.0.0.1:{lb.control_port}/-/replicas"
            slow = asyncio.create_task(who(http, lb.port, "/sleep?s=1"))
            await asyncio.sleep(0.3)
            body = replica_set(urls[1:]).model_dump_json()
            async with http.put(control, data=body) as resp:
                view = await resp.json()
            assert [r["url"] for r in view["ready"]] == [urls[1]]
            assert view["draining"] == [{"url": urls[0], "replica_id": 1, "inflight": 1}]
            # new requests go to the remaining replica while the old one finishes its own
            assert {await who(http, lb.port) for _ in range(5)} == {"2"}
            assert await slow == "1"
            async with http.get(control) as resp:
                assert (await resp.json())["draining"] == []
            async with http.put(control, data=b'{"replicas": [{"url": "ftp://x"}]}') as resp:
                assert resp.status == 400
            assert [t.url for t in lb.proxy.targets] == [urls[1]]

    run(scenario())


def test_replica_file_is_watched_and_a_bad_file_changes_nothing(tmp_path: Path):
    path = tmp_path / "replicas.json"

    async def scenario():
        async with (
            replicas(2) as urls,
            balancer([], replicas_file=str(path)) as lb,
            aiohttp.ClientSession() as http,
        ):
            write_json_atomic(path, replica_set(urls))
            await asyncio.sleep(0.6)
            assert {await who(http, lb.port) for _ in range(6)} == {"1", "2"}
            path.write_text('{"replicas": "nope"}')
            await asyncio.sleep(0.6)
            assert len(lb.proxy.targets) == 2

    run(scenario())


def test_metrics_count_requests_latency_and_inflight():
    async def scenario():
        async with replicas(1) as urls, balancer(urls) as lb, aiohttp.ClientSession() as http:
            for _ in range(4):
                await who(http, lb.port)
            slow = asyncio.create_task(who(http, lb.port, "/sleep?s=0.6"))
            await asyncio.sleep(0.3)
            async with http.get(f"http://127.0.0.1:{lb.control_port}/metrics") as resp:
                text = await resp.text()
            await slow
            return text

    text = run(scenario())
    assert 'skyform_lb_requests_total{service="svc",code="200"} 4' in text
    assert 'skyform_lb_replica_inflight{service="svc",replica="1"} 1' in text
    assert 'skyform_lb_request_duration_seconds_bucket{service="svc",le="+Inf"} 4' in text
    assert 'skyform_lb_request_duration_seconds_count{service="svc"} 4' in text
    assert 'skyform_lb_ready_replicas{service="svc"} 1' in text


def test_tls_endpoint(tmp_path: Path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", cert],
        check=True, capture_output=True,
    )  # fmt: skip

    async def scenario():
        async with (
            replicas(1) as urls,
            balancer(urls, tls_keyfile=str(key), tls_certfile=str(cert)) as lb,
            aiohttp.ClientSession() as http,
        ):
            context = ssl.create_default_context(cafile=str(cert))
            context.check_hostname = False
            async with http.get(f"https://127.0.0.1:{lb.port}/", ssl=context) as resp:
                assert resp.status == 200 and "replica 1" in await resp.text()
            assert lb.config.scheme == "https"

    run(scenario())


def test_request_log_lines_per_second_and_compaction(tmp_path: Path, monkeypatch):
    from skyform.serve.lb import requestlog

    path = tmp_path / "r.log"
    log = RequestLog(path)
    for t in (100.1, 100.5, 101.2, 103.0):
        log.record(t)
    log.flush(101.9)  # second 101 is not over yet
    assert read_counts(path) == [(100, 2)]
    log.flush(200, everything=True)
    assert read_counts(path) == [(100, 2), (101, 1), (103, 1)]
    torn = tmp_path / "torn.log"
    torn.write_text(path.read_text() + "104 1")  # a line being written is not read yet
    assert read_counts(torn)[-1] == (103, 1)
    monkeypatch.setattr(requestlog, "COMPACT_BYTES", 10)
    log.record(2000.0)
    log.flush(2001)
    assert read_counts(path) == [(2000, 1)]
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_the_lb_process_serves_until_sigterm(tmp_path: Path):
    async def scenario():
        async with replicas(2) as urls, aiohttp.ClientSession() as http:
            config = lb_files(tmp_path, urls, request_log=str(tmp_path / "requests.log"))
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "skyform.serve.lb", str(config),
                stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            deadline = time.monotonic() + 20
            while not (tmp_path / "ports.json").exists():
                assert time.monotonic() < deadline and proc.returncode is None
                await asyncio.sleep(0.05)
            port = json.loads((tmp_path / "ports.json").read_text())["port"]
            answers = [await who(http, port, "/") for _ in range(10)]
            os.kill(proc.pid, signal.SIGTERM)
            assert await asyncio.wait_for(proc.wait(), 10) == 0
            return answers

    answers = run(scenario())
    assert sorted(set(answers)) == ["1", "2"]
    assert sum(n for _, n in read_counts(tmp_path / "requests.log")) == 10
