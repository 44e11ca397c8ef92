"""skyform's load balancer against nginx as a reverse proxy, back to back on this machine.

    .venv/bin/python bench/lb_vs_nginx.py [--seconds 10] [--connections 64] [--rounds 1]

Two loopback backends (a small nginx answering 200 "ok", or tests/serve/replica_app.py when
nginx is missing), then for each balancer in turn (nginx as an upstream proxy with pooled
keep-alive connections, and `python -m skyform.serve.lb` as the controller starts it):
  1. `wrk -c1` (one connection, one request at a time): p50 latency, minus the same measured
     against a backend directly = the latency the balancer adds at low load. wrk repeats one
     request, whose head the balancer has parsed before on that connection (http1.LastHead);
     the `varied` column asks for a new path each time (a wrk script), so no request head
     repeats;
  2. `wrk -c CONNECTIONS`: requests per second, and the CPU the balancer's processes used
     per request (utime + stime of the process and its workers, from /proc).
The load generator is Debian's `wrk` (apt-get install wrk); nginx is Debian's `nginx`. Without
nginx the nginx rows are skipped. The machine may be shared: compare the ratio, not the
absolute figures, and run `--rounds 3` to see the spread.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

from skyform.serve.lb.config import LbConfig, ReplicaEntry, ReplicaSet, write_json_atomic  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], what: str) -> None:
    import socket

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not listen on port {port}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start(stack: ExitStack, argv: list[str], port: int, what: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stack.callback(stop, proc)
    wait_port(port, proc, what)
    return proc


def nginx_conf(work: Path, name: str, workers: str, servers: str) -> Path:
    folder = work / name
    folder.mkdir()
    conf = folder / "nginx.conf"
    conf.write_text(
        f"""daemon off; master_process on; worker_processes {workers};
pid {folder}/nginx.pid; error_log {folder}/error.log error;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {folder}/body; proxy_temp_path {folder}/proxy;
  fastcgi_temp_path {folder}/fcgi; uwsgi_temp_path {folder}/uwsgi; scgi_temp_path {folder}/scgi;
  keepalive_requests 1000000;
{servers}
}}
"""
    )
    return conf


def start_backends(stack: ExitStack, work: Path, nginx: str | None) -> list[str]:
    ports = [free_port(), free_port()]
    if nginx is not None:
        servers = "".join(
            f'  server {{ listen 127.0.0.1:{p}; location / {{ return 200 "ok {i}\\n"; }} }}\n'
            for i, p in enumerate(ports, 1)
        )
        conf = nginx_conf(work, "backends", "1", servers)
        start(stack, [nginx, "-c", str(conf), "-p", str(conf.parent)], ports[1], "backends")
        return [f"http://127.0.0.1:{p}" for p in ports]
    app = REPO / "tests" / "serve" / "replica_app.py"
    for i, port in enumerate(ports, 1):
        argv = [sys.executable, str(app), str(port), "127.0.0.1"]
        env = {**os.environ, "SKYPILOT_SERVE_REPLICA_ID": str(i)}
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stack.callback(stop, proc)
        wait_port(port, proc, f"backend {i}")
    return [f"http://127.0.0.1:{p}" for p in ports]


def start_nginx_lb(
    stack: ExitStack, work: Path, nginx: str, backends: list[str]
) -> tuple[int, int]:
    port = free_port()
    members = "".join(f"    server {u.removeprefix('http://')};\n" for u in backends)
    servers = f"""  upstream backends {{
    least_conn;
{members}    keepalive 128;
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://backends;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }}
  }}
"""
    conf = nginx_conf(work, "nginx-lb", "auto", servers)
    proc = start(stack, [nginx, "-c", str(conf), "-p", str(conf.parent)], port, "nginx")
    return port, proc.pid


def start_skyform_lb(stack: ExitStack, work: Path, backends: list[str]) -> tuple[int, int]:
    folder = work / "skyform-lb"
    folder.mkdir()
    replicas = ReplicaSet(
        replicas=tuple(ReplicaEntry(url=u, replica_id=i) for i, u in enumerate(backends, 1))
    )
    write_json_atomic(folder / "replicas.json", replicas)
    config = LbConfig(
        service="bench",
        port=free_port(),
        replicas_file=str(folder / "replicas.json"),
        request_log=str(folder / "requests.log"),
        ports_file=str(folder / "ports.json"),
    )
    write_json_atomic(folder / "lb.json", config)
    argv = [sys.executable, "-m", "skyform.serve.lb", str(folder / "lb.json")]
    proc = start(stack, argv, config.port, "skyform's load balancer")
    return config.port, proc.pid


def tree_cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` and its live children (the balancer's worker processes)."""
    total = 0.0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
    return total


# a new path for every request: no request head is the same as the one before
NEW_PATH_EACH_TIME = """
counter = 0
request = function()
  counter = counter + 1
  return wrk.format(nil, "/" .. counter)
end
"""


def wrk(url: str, connections: int, seconds: float, script: str | None = None) -> dict[str, float]:
    threads = min(2, connections)
    # wrk takes whole seconds only (`-d2.5s` is refused)
    duration = f"-d{max(1, round(seconds))}s"
    argv = ["wrk", "--latency", f"-t{threads}", f"-c{connections}", duration, url]
    if script is not None:
        argv[1:1] = ["-s", script]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"50%\s+([\d.]+\w+)", out).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: (.*)", out)
    return {
        "rps": rps,
        "requests": total,
        "p50_ms": p50,
        "failed": int(errors.group(1)) if errors else 0,
        "socket_errors": socket_errors.group(1) if socket_errors else "",  # type: ignore[dict-item]
    }


def _ms(text: str) -> float:
    value, unit = re.match(r"([\d.]+)(\w+)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def measure(
    port: int, pid: int | None, connections: int, seconds: float, base: float, varied: tuple
) -> dict:
    url = f"http://127.0.0.1:{port}/"
    wrk(url, 8, 1)  # warm the pools
    low = wrk(url, 1, seconds / 2)
    script, varied_base = varied
    low_varied = wrk(url, 1, seconds / 2, script)
    before = tree_cpu_seconds(pid) if pid else 0.0
    high = wrk(url, connections, seconds)
    used = tree_cpu_seconds(pid) - before if pid else 0.0
    return {
        "rps": round(high["rps"]),
        "cpu_us_per_req": round(used / high["requests"] * 1e6, 1) if pid else None,
        "p50_ms_c1": round(low["p50_ms"], 3),
        "added_ms_c1": round(low["p50_ms"] - base, 3),
        "added_ms_c1_varied": round(low_varied["p50_ms"] - varied_base, 3),
        "failed": high["failed"],
        "socket_errors": high["socket_errors"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is missing: apt-get install wrk")
    nginx = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if nginx is None:
        print("nginx is missing (apt-get install nginx): measuring skyform's balancer only")
    rows: list[dict] = []
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        backends = start_backends(stack, work, nginx)
        balancers = [("skyform", start_skyform_lb(stack, work, backends))]
        if nginx is not None:
            balancers.append(("nginx", start_nginx_lb(stack, work, nginx, backends)))
        script = work / "new-path-each-time.lua"
        script.write_text(NEW_PATH_EACH_TIME)
        for round_ in range(1, args.rounds + 1):
            direct = wrk(backends[0] + "/", 1, args.seconds / 2)["p50_ms"]
            direct_varied = wrk(backends[0] + "/", 1, args.seconds / 2, str(script))["p50_ms"]
            rows.append({"round": round_, "proxy": "direct", "p50_ms_c1": round(direct, 3)})
            for name, (port, pid) in balancers:
                varied = (str(script), direct_varied)
                row = measure(port, pid, args.connections, args.seconds, direct, varied)
                rows.append({"round": round_, "proxy": name, **row})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"wrk, {args.connections} connections, {args.seconds:g} s; {os.cpu_count()} cpus")
    print(
        f"{'round':>5} {'proxy':8} {'req/s':>8} {'cpu µs/req':>10} {'p50 c1 ms':>10} {'added':>9}"
        f" {'varied':>9}"
    )
    for r in rows:
        print(
            f"{r['round']:>5} {r['proxy']:8} {r.get('rps', ''):>8} "
            f"{r.get('cpu_us_per_req') or '':>10} {r['p50_ms_c1']:>10} "
            f"{r.get('added_ms_c1', ''):>9} {r.get('added_ms_c1_varied', ''):>9}"
        )
    for round_ in range(1, args.rounds + 1):
        by = {r["proxy"]: r for r in rows if r["round"] == round_}
        if "nginx" in by:
            ratio = by["skyform"]["rps"] / by["nginx"]["rps"]
            print(f"round {round_}: skyform / nginx throughput = {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
