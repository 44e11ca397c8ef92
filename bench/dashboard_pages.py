"""Page-load times of `skyform dashboard` with a large store (issue #30: ≤ 300 ms a page
with 1,000 clusters and 10,000 jobs).

Fills a fresh SQLite store under a temporary SKYFORM_HOME (1,000 UP clusters on an ssh
pool shape with prices, half with autostop, two usage intervals and 10 jobs each, 200
managed jobs), starts the real
dashboard server on loopback, and times each page over HTTP (median and worst of N).

    .venv/bin/python bench/dashboard_pages.py [--clusters 1000] [--jobs 10] [--rounds 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def fill(clusters: int, jobs_each: int, managed: int) -> None:
    from skyform.plan.cluster_model import AutostopSetting
    from skyform.plan.model import ClusterSpec, PlacedOffer
    from skyform.state.db import open_state
    from skyform.state.managed import ManagedJobRecord, ManagedJobs, ManagedTask
    from skyform.state.models import ClusterRecord, ClusterStatus, JobRecord, JobStatus

    now = time.time()
    with open_state() as db:
        for i in range(clusters):
            name = f"c{i:04d}"
            offer = PlacedOffer(
                cloud="ssh",
                region=f"pool{i % 7}",
                zone=None,
                instance_type="2cpu-4gb",
                spot=i % 3 == 0,
                hourly_price=0.1 + (i % 10) / 100,
                vcpus=2,
                memory_gib=4,
            )
            spec = ClusterSpec(
                name=name,
                offer=offer,
                num_nodes=1 + i % 3,
                autostop=AutostopSetting(stop_after=10) if i % 2 else None,
            )
            record = ClusterRecord(
                name=name,
                status=ClusterStatus.UP,
                spec=spec,
                hourly_price=offer.hourly_price,
                launched_at=now - 3600 * (i % 48),
            )
            db.put_cluster(record)
            # the cost report's intervals: one closed stretch days ago, one open since launch
            db.open_usage(record, started_at=now - 86400 * (1 + i % 20))
            db.close_usage(name, ended_at=now - 86400 * (i % 20) - 3600)
            db.open_usage(record, started_at=record.launched_at)
            with db.transaction() as conn:
                conn.executemany(
                    "INSERT INTO jobs (cluster, job_id, status, record) VALUES (?, ?, ?, ?)",
                    [
                        (
                            name,
                            j,
                            "SUCCEEDED",
                            JobRecord(
                                cluster=name,
                                job_id=j,
                                name=f"train-{j}",
                                task_id=f"t-{i}-{j}",
                                status=JobStatus.SUCCEEDED,
                                submitted_at=now - 600,
                                started_at=now - 590,
                                ended_at=now - 30,
                                exit_codes={0: 0},
                            ).model_dump_json(),
                        )
                        for j in range(1, jobs_each + 1)
                    ],
                )
        store = ManagedJobs(db)
        for k in range(managed):
            store.create(
                ManagedJobRecord(
                    id=0,
                    name=f"mj-{k}",
                    task_file="/tmp/task.yaml",
                    tasks=[ManagedTask(index=0, name=f"mj-{k}", cluster=f"c{k:04d}")],
                    submitted_at=now - 100,
                )
            )


PAGES = [
    "/clusters",
    "/clusters?page=20",
    "/clusters/c0500",
    "/jobs",
    "/jobs?page=150",
    "/clusters/c0500/jobs/3",
    "/managed",
    "/managed/5",
    "/plans",
    "/services",
    "/cost",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=10, help="jobs per cluster")
    parser.add_argument("--managed", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="skyform-dash-bench-"))
    os.environ["SKYFORM_HOME"] = str(home)
    started = time.perf_counter()
    fill(args.clusters, args.jobs, args.managed)
    print(
        f"store: {args.clusters} clusters, {args.clusters * args.jobs} jobs, "
        f"{args.managed} managed jobs (filled in {time.perf_counter() - started:.1f} s)"
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "skyform.cli.main", "dashboard", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        base = line.split(" at ", 1)[1].split()[0].rstrip("/")
        print(f"{'page':28} {'median ms':>10} {'worst ms':>9} {'bytes':>8}")
        for page in PAGES:
            times, size = [], 0
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                with urllib.request.urlopen(base + page, timeout=30) as reply:
                    size = len(reply.read())
                times.append((time.perf_counter() - t0) * 1000)
            print(f"{page:28} {statistics.median(times):10.1f} {max(times):9.1f} {size:8}")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
