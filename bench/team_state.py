#!/usr/bin/env python3
"""Team mode under load: one throw-away PostgreSQL server (initdb + pg_ctl, as the tests
start it), then

1. **20 concurrent clients planning and applying.** Each client is its own process and goes
   through skyform's state layer the way `plan` and `apply` do: read the snapshot a plan is
   made from (`read_snapshot`: lineage, serial, clusters, hosts), then take the cluster's
   lease (`cluster_lock`), check the plan is still fresh for that cluster (its version is not
   newer than the snapshot's serial, as apply's freshness check does) and write the apply's
   records (cluster, job id, job, event) — or be refused as stale. Half the applies go to the
   client's own cluster, half to one shared `hot` cluster that every client fights over;
   each successful apply of `hot` also increments a counter inside its record
   (read-modify-write under the lease). No lost update: the counter equals the number of
   successful `hot` applies. No deadlock: every client finishes, no PostgreSQL deadlock error.
2. **`status` at size:** 1,000 clusters (--clusters N ...) and 10,000 jobs in the store;
   `skyform status` (a new process, as a user runs it, plain and --json), median of N runs
   (target <= 0.5 s), wall and CPU time of the process, and the load average meanwhile.

    .venv/bin/python bench/team_state.py [--clients 20] [--rounds 15] [--runs 5]
                                         [--clusters 1000 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

CLIENT = r"""
import json, os, random, sys, time
from skyform.errors import LockedError
from skyform.plan.model import ClusterSpec, PlacedOffer
from skyform.state.db import open_state
from skyform.state.lock import cluster_lock
from skyform.state.models import ClusterRecord, ClusterStatus, JobRecord, JobStatus
from skyform.stacks.registry import nodes_gone
from skyform.state.snapshot import read_snapshot

me, rounds = sys.argv[1], int(sys.argv[2])
random.seed(me)
offer = PlacedOffer(cloud="local", region="local", zone=None, instance_type="local",
                    spot=False, hourly_price=0.0)
stats = {"applied": 0, "hot_applied": 0, "stale": 0, "locked": 0, "plan_s": [], "apply_s": []}
with open_state() as db:
    for i in range(rounds):
        name = "hot" if i % 2 else f"own-{me}"
        t0 = time.perf_counter()
        snap = read_snapshot(nodes_gone)  # what `plan` reads
        t1 = time.perf_counter()
        stats["plan_s"].append(t1 - t0)
        try:
            with cluster_lock(name, wait=60, purpose=f"bench apply {me}"):
                if db.cluster_version(name) > snap.serial:  # apply's freshness check
                    stats["stale"] += 1
                    continue
                old = db.get_cluster(name)
                count = int(old.plan_digest or 0) if old else 0
                db.put_cluster(ClusterRecord(
                    name=name, status=ClusterStatus.UP, hourly_price=0.0,
                    spec=ClusterSpec(name=name, offer=offer, num_nodes=1),
                    plan_digest=str(count + 1),  # the lost-update counter
                ))
                job_id = db.next_job_id(name)
                db.put_job(JobRecord(cluster=name, job_id=job_id, name="j", task_id=me,
                                     status=JobStatus.SUCCEEDED, submitted_at=time.time()))
                db.add_event("cluster.up", f"applied by {me}", cluster=name)
                stats["applied"] += 1
                stats["hot_applied"] += name == "hot"
        except LockedError:
            stats["locked"] += 1
        stats["apply_s"].append(time.perf_counter() - t1)
print(json.dumps(stats))
"""

FILL = r"""
import sys, time
from skyform.plan.model import ClusterSpec, PlacedOffer
from skyform.state.db import open_state
from skyform.state.models import ClusterRecord, ClusterStatus, JobRecord, JobStatus

clusters, jobs = int(sys.argv[1]), int(sys.argv[2])
offer = PlacedOffer(cloud="local", region="local", zone=None, instance_type="local",
                    spot=False, hourly_price=0.0)
with open_state() as db, db.transaction():
    for c in range(clusters):
        name = f"c{c:04d}"
        db.put_cluster(ClusterRecord(name=name, status=ClusterStatus.UP, hourly_price=0.0,
                                     spec=ClusterSpec(name=name, offer=offer, num_nodes=1),
                                     launched_at=time.time()))
        for j in range(jobs // clusters):
            db.put_job(JobRecord(cluster=name, job_id=j + 1, name="j", task_id="t",
                                 status=JobStatus.SUCCEEDED, submitted_at=time.time()))
"""


READ = r"""
import json, time
t0 = time.perf_counter()
from skyform.state.db import open_state
with open_state() as db:
    t1 = time.perf_counter()
    rows = db.cluster_rows()  # what plain `status` reads (no models)
    t2 = time.perf_counter()
    clusters = db.list_clusters()  # what --json and -v read (the models)
    t3 = time.perf_counter()
    jobs = db.list_jobs()
    t4 = time.perf_counter()
print(json.dumps({"open_s": t1 - t0, "rows_s": t2 - t1, "clusters_s": t3 - t2, "jobs_s": t4 - t3,
                  "n": [len(rows or []), len(clusters), len(jobs)]}))
"""


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def concurrent(env: dict[str, str], clients: int, rounds: int, url: str) -> dict:
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLIENT, str(n), str(rounds)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(clients)
    ]
    outputs = [p.communicate(timeout=600) for p in procs]
    wall = time.perf_counter() - started
    failed = [err for (out, err), p in zip(outputs, procs, strict=True) if p.returncode]
    if failed:
        raise SystemExit("a client failed (deadlock or error):\n" + failed[0])
    stats = [json.loads(out) for out, _ in outputs]
    from skyform.state.db import open_state

    with open_state(url=url) as db:
        hot = db.get_cluster("hot")
        counter = int(hot.plan_digest or 0) if hot else 0
        hot_jobs = len(db.list_jobs("hot"))
    applied = sum(s["applied"] for s in stats)
    hot_applied = sum(s["hot_applied"] for s in stats)
    plans = [x for s in stats for x in s["plan_s"]]
    applies = [x for s in stats for x in s["apply_s"]]
    return {
        "clients": clients,
        "rounds_each": rounds,
        "wall_s": round(wall, 2),
        "applied": applied,
        "stale_refused": sum(s["stale"] for s in stats),
        "lock_timeouts": sum(s["locked"] for s in stats),
        "hot_applied": hot_applied,
        "hot_counter": counter,
        "hot_jobs": hot_jobs,
        "lost_updates": hot_applied - counter,
        "applies_per_s": round(applied / wall, 1),
        "plan_read_ms_p50": round(statistics.median(plans) * 1000, 1),
        "plan_read_ms_p95": round(_percentile(plans, 0.95) * 1000, 1),
        "apply_ms_p50": round(statistics.median(applies) * 1000, 1),
        "apply_ms_p95": round(_percentile(applies, 0.95) * 1000, 1),
    }


def status_at_size(env: dict[str, str], runs: int, clusters: int = 1000) -> dict:
    started = time.perf_counter()
    jobs = 10000
    subprocess.run([sys.executable, "-c", FILL, str(clusters), str(jobs)], env=env, check=True)
    fill = time.perf_counter() - started
    result = {"clusters": clusters, "jobs": jobs, "fill_s": round(fill, 1)}
    reads = []
    for _ in range(runs):  # the store's share of status: open, every cluster, every job
        out = subprocess.run(
            [sys.executable, "-c", READ], env=env, capture_output=True, text=True, check=True
        )
        reads.append(json.loads(out.stdout))
    for key in ("open_s", "rows_s", "clusters_s", "jobs_s"):
        result[f"read {key} median"] = round(statistics.median(r[key] for r in reads), 3)
    # bytecode caching on, as in any installed package (this machine's shells turn it off, and
    # then every run compiles skyform again); one untimed run writes the bytecode
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    warm = [sys.executable, "-m", "skyform.cli.main", "status"]
    subprocess.run(warm, env=env, capture_output=True)
    for label, extra in (("status", []), ("status --json", ["--json"])):
        times, cpu, loads = [], [], []
        for _ in range(runs):
            before = _children_cpu()
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "skyform.cli.main", "status", *extra],
                env=env,
                capture_output=True,
                text=True,
            )
            times.append(time.perf_counter() - t0)
            cpu.append(_children_cpu() - before)
            loads.append(os.getloadavg()[0])
            if proc.returncode or f"c{clusters - 1:04d}" not in proc.stdout:
                raise SystemExit(f"`skyform {label}` failed: {proc.stderr[-500:]}")
        result[f"{label} median_s"] = round(statistics.median(times), 3)
        result[f"{label} min_s"] = round(min(times), 3)
        result[f"{label} cpu median_s"] = round(statistics.median(cpu), 3)
        result[f"{label} load"] = [round(min(loads), 2), round(max(loads), 2)]
    return result


def _children_cpu() -> float:
    """CPU seconds of the finished child processes (user + system): less noisy than wall
    time on a loaded machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--clusters", type=int, nargs="+", default=[1000], help="status at these sizes"
    )
    args = parser.parse_args()
    from pgserver import PgServer, _bindir

    bindir = _bindir()
    if bindir is None:
        raise SystemExit("PostgreSQL is not installed (apt-get install postgresql)")
    server = PgServer(bindir)
    try:
        server.init()
        server.start()
        home = tempfile.mkdtemp(prefix="skyform-bench-")
        env = dict(os.environ, SKYFORM_HOME=home, COLUMNS="200", NO_COLOR="1")
        url = server.new_database()
        env["SKYFORM_STATE_URL"] = url
        print(json.dumps({"concurrent": concurrent(env, args.clients, args.rounds, url)}, indent=1))
        for clusters in args.clusters:
            env["SKYFORM_STATE_URL"] = server.new_database()
            found = status_at_size(env, args.runs, clusters)
            print(json.dumps({"status_at_size": found}, indent=1))
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
