#!/usr/bin/env python3
"""Fan-out cost on real sshd nodes on loopback (tests/sshnodes.py; needs root, sshd, rsync).

For 1, 4 and 8 nodes, median (min–max) over N runs of:

- `true` on a warm session   one reused connection per node, all nodes in parallel;
- connect + `true`           a fresh session: TCP + SSH handshake + runner check, then `true`;
- no-change workdir sync     rsync of a 1,000-file workdir that is already on every node;
- no-change sync over SFTP   the fallback (rsync hidden from PATH), for comparison.

Targets (from the issues): 8 nodes ≤ 1.5× one node; a no-change sync of 1,000 files ≤ 1 s;
client CPU per additional node for a warm exec ≤ 5 ms ((CPU at 8 nodes − at 1) / 7; the exit
status is 1 when it is over).
Client and every sshd share this machine's cores, so fan-out here is CPU-bound in a way a
real cluster (one machine per node) is not: the table prints this machine's core count.

    .venv/bin/python bench/exec_fanout.py [-n 7] [--files 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests/exec")]

from execkit import make_cluster  # noqa: E402
from sshnodes import SSHNodes, missing_requirements  # noqa: E402

from skyform.exec.run import open_cluster  # noqa: E402

SIZES = (1, 4, 8)
CPU_TARGET_MS = 5.0  # issue 17: client CPU per additional node for a warm exec


CPU: dict[str, list[float]] = {}  # label -> client CPU seconds per run


def _timed(fn: Callable[[], object], runs: int, label: str = "") -> list[float]:
    times = []
    for _ in range(runs):
        started, cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - started)
        CPU.setdefault(label, []).append(time.process_time() - cpu)
    return times


def _fmt(times: list[float]) -> str:
    low, high = min(times) * 1000, max(times) * 1000
    return f"{statistics.median(times) * 1000:7.1f} ms ({low:.1f}–{high:.1f})"


def _workdir(root: Path, files: int) -> Path:
    for i in range(files):
        path = root / f"pkg{i % 20}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {i}\n" + "x = 1\n" * (i % 50))
    return root


def _true_everywhere(session) -> None:
    outcomes = session.fan_out(lambda rank, runner: runner.run("true"))
    assert all(o.ok and o.value.ok for o in outcomes.values())


def _connect_and_true(cluster) -> None:
    with open_cluster(cluster) as session:
        _true_everywhere(session)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=7, help="runs per measurement (median shown)")
    parser.add_argument("--files", type=int, default=1000, help="files in the synced workdir")
    args = parser.parse_args()
    reason = missing_requirements()
    if reason:
        print(f"skipped: {reason}")
        return 0
    os.environ["SKYFORM_HOME"] = tempfile.mkdtemp(prefix="skyform-bench-")
    workdir = _workdir(Path(tempfile.mkdtemp(prefix="bench-workdir-")), args.files)
    rows = []
    with SSHNodes(max(SIZES)) as nodes:
        for size in SIZES:
            cluster = make_cluster(nodes.handles()[:size], name=f"bench{size}")
            cold = _timed(lambda c=cluster: _connect_and_true(c), args.n, f"cold{size}")
            with open_cluster(cluster) as session:
                _timed(lambda s=session: _true_everywhere(s), 3)  # warm-up
                warm = _timed(lambda s=session: _true_everywhere(s), args.n * 3, f"warm{size}")
                first = _timed(lambda s=session: s.sync_workdir(workdir), 1)
                sync = _timed(lambda s=session: s.sync_workdir(workdir), args.n)
                saved = os.environ["PATH"]
                os.environ["PATH"] = tempfile.mkdtemp(prefix="no-rsync-")  # SFTP fallback
                try:
                    sftp = _timed(lambda s=session: s.sync_workdir(workdir), args.n)
                finally:
                    os.environ["PATH"] = saved
            rows.append((size, warm, cold, first, sync, sftp))
    print(f"exec fan-out on {os.cpu_count()} cores, {args.files}-file workdir, {args.n} runs\n")
    header = f"{'nodes':>5}  {'true (warm)':>26}  {'connect + true':>26}  "
    header += f"{'first sync':>10}  {'no-change sync':>26}  {'no-change SFTP':>26}"
    print(header)
    for size, warm, cold, first, sync, sftp in rows:
        print(
            f"{size:>5}  {_fmt(warm):>26}  {_fmt(cold):>26}  {first[0] * 1000:7.0f} ms  "
            f"{_fmt(sync):>26}  {_fmt(sftp):>26}"
        )
    one, eight = rows[0], rows[-1]
    print()
    for label, index in (("true (warm)", 1), ("connect + true", 2), ("no-change sync", 4)):
        ratio = statistics.median(eight[index]) / statistics.median(one[index])
        print(f"8 nodes / 1 node, {label}: {ratio:.2f}x (target <= 1.5x)")
    print(f"no-change sync of {args.files} files on 8 nodes: {statistics.median(eight[4]):.2f} s")
    print("\nclient CPU per node (what grows with nodes when each node is its own machine):")
    for size in SIZES:
        warm = statistics.median(CPU[f"warm{size}"]) / size * 1000
        cold = statistics.median(CPU[f"cold{size}"]) / size * 1000
        print(f"  {size} nodes: true (warm) {warm:.2f} ms, connect + true {cold:.1f} ms")
    low, high = SIZES[0], SIZES[-1]
    extra = {
        kind: (statistics.median(CPU[f"{kind}{high}"]) - statistics.median(CPU[f"{kind}{low}"]))
        / (high - low)
        * 1000
        for kind in ("warm", "cold")
    }
    ok = extra["warm"] <= CPU_TARGET_MS
    print(
        f"client CPU per additional node: warm exec {extra['warm']:.2f} ms "
        f"(target <= {CPU_TARGET_MS:g} ms: {'met' if ok else 'MISSED'}), "
        f"connect + exec {extra['cold']:.1f} ms"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
