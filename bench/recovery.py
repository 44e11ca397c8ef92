"""Seconds from a node kill to detection, and to RUNNING again, for a managed job on an ssh
pool of real sshd nodes (two labelled regions, spot hosts), through the CLI as a user runs it.

    sudo .venv/bin/python bench/recovery.py [--runs 3] [--interval 2] [--lost-after 2]

Needs root, /usr/sbin/sshd and rsync (as the end-to-end tests). Targets: detection ≤ 10 s,
RUNNING again ≤ 30 s (SkyPilot polls every 15 s and may wait 60 s more).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e")]

from e2ekit import two_region_pool  # noqa: E402
from sshnodes import SSHNodes, missing_requirements  # noqa: E402

TASK = """\
name: bench
resources: {infra: ssh/lab, use_spot: true}
run: for i in $(seq 1 600); do echo tick $i; sleep 0.5; done
"""


def sky(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, SKYFORM_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "skyform.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def events(home: Path) -> list[tuple[float, str]]:
    conn = sqlite3.connect(home / "state.db")
    try:
        return conn.execute(
            "SELECT ts, kind FROM events WHERE kind LIKE 'managed.%' ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


def one_run(interval: float, lost_after: int) -> tuple[float, float]:
    with SSHNodes(4) as nodes, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        two_region_pool(home, nodes, check_interval=interval, lost_after=lost_after)
        task = Path(tmp) / "task.yaml"
        task.write_text(TASK)
        launched = sky(home, "jobs", "launch", str(task), "-d")
        assert launched.returncode == 0, launched.stderr
        deadline = time.time() + 60
        while not any(k == "managed.running" for _, k in events(home)):
            assert time.time() < deadline, "never started"
            time.sleep(0.1)
        time.sleep(2)
        victim = next(i for i in range(4) if nodes.user_pids(i))
        killed_at = time.time()
        nodes.kill_node(victim)
        detected = running = None
        while time.time() < killed_at + 120:
            for ts, kind in events(home):
                if ts < killed_at:
                    continue
                if kind == "managed.recovering" and detected is None:
                    detected = ts - killed_at
                if kind == "managed.running" and detected is not None and running is None:
                    running = ts - killed_at
            if running is not None:
                break
            time.sleep(0.1)
        sky(home, "jobs", "cancel", "--all")
        if detected is None or running is None:
            raise RuntimeError("the job did not recover within 120 s")
        return detected, running


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--lost-after", type=int, default=2)
    args = parser.parse_args()
    reason = missing_requirements()
    if reason:
        sys.exit(f"cannot start sshd nodes here: {reason}")
    results = [one_run(args.interval, args.lost_after) for _ in range(args.runs)]
    detect = [d for d, _ in results]
    running = [r for _, r in results]
    print(
        json.dumps(
            {
                "check_interval_s": args.interval,
                "lost_after_probes": args.lost_after,
                "runs": args.runs,
                "detection_s": {
                    "median": round(statistics.median(detect), 2),
                    "max": round(max(detect), 2),
                },
                "running_again_s": {
                    "median": round(statistics.median(running), 2),
                    "max": round(max(running), 2),
                },
                "targets": {"detection_s": 10, "running_again_s": 30},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
