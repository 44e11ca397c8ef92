#!/usr/bin/env python3
"""Fan-out cost on real sshd nodes on loopback (tests/sshnodes.py; needs root, sshd, rsync).

The target (issue 17): client CPU per additional node for a warm `skyform exec CLUSTER CMD`
<= 5 ms. Nine sshd nodes make an ssh pool; `skyform launch` brings up a 1-node and an 8-node
cluster on it; each gets one untimed `exec` (runner installed, bytecode written), then N timed
`skyform exec CLUSTER true` processes, the two sizes alternating. Client CPU is the skyform
process's (and its children's) user + system time, from getrusage(RUSAGE_CHILDREN); per
additional node = (median CPU at 8 nodes - median at 1) / 7. Wall times, the 8-node/1-node
wall ratio and the load average are printed with it, and the CPU that the clusters' SSH
connection keepers (skyform/exec/keeper.py, long-lived processes that are not the client's
children) spend per additional node, over more execs of each cluster alone. The exit status
is 1 when the target is missed (or an exec fails).

With --sessions, also the in-process table of ClusterSession fan-outs for 1, 4 and 8 nodes,
median (min-max) over N runs, and its client CPU (this process's only):

- `true` on a warm session   one reused connection per node, all nodes in parallel;
- connect + `true`           a fresh session: TCP + SSH handshake + runner check, then `true`;
- no-change workdir sync     rsync of a 1,000-file workdir that is already on every node;
- no-change sync over SFTP   the fallback (rsync hidden from PATH), for comparison.

Targets there (from the issues): 8 nodes <= 1.5x one node; a no-change sync of 1,000 files
<= 1 s. Client and every sshd share this machine's cores, so fan-out here is CPU-bound in a
way a real cluster (one machine per node) is not: the output prints the core count.

    .venv/bin/python bench/exec_fanout.py [-n 9] [--sessions] [--files 1000]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests/exec"), str(REPO / "tests/e2e")]

from e2ekit import write_pool  # noqa: E402
from execkit import make_cluster  # noqa: E402
from sshnodes import SSHNodes, missing_requirements  # noqa: E402

SIZES = (1, 4, 8)
CPU_TARGET_MS = 5.0  # issue 17: client CPU per additional node for a warm exec
CLI_SIZES = {"one": 1, "eight": 8}


# --- the target: `skyform exec CLUSTER true` as a user runs it ------------------------------


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _skyform(env: dict[str, str], *args: str) -> tuple[float, float]:
    """Run the CLI once; (wall, client CPU) seconds. Raises when it fails."""
    started, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run(
        [sys.executable, "-m", "skyform.cli.main", *args],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    wall, used = time.perf_counter() - started, _children_cpu() - cpu
    if proc.returncode != 0:
        raise RuntimeError(f"skyform {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}")
    return wall, used


def _cli_env(home: Path) -> dict[str, str]:
    env = dict(os.environ, SKYFORM_HOME=str(home), PYTHONPATH=str(REPO), NO_COLOR="1")
    env["COLUMNS"] = "200"
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package: bytecode cached
    return env


def measure_cli(
    nodes: SSHNodes, runs: int
) -> tuple[dict[str, list[tuple[float, float]]], dict[str, float]]:
    """Launch the 1- and 8-node clusters, exec once untimed, then `runs` timed execs each:
    (cluster -> (wall, client CPU) samples, cluster -> its keepers' CPU seconds per exec)."""
    home = Path(tempfile.mkdtemp(prefix="skyform-bench-cli-"))
    write_pool(home, nodes, range(sum(CLI_SIZES.values())))
    env = _cli_env(home)
    for name, count in CLI_SIZES.items():
        task = home / f"{name}.yaml"
        task.write_text(f"name: {name}\nnum_nodes: {count}\nresources: {{infra: ssh/lab}}\n")
        _skyform(env, "launch", str(task), "-y")
        _skyform(env, "exec", name, "true")  # warm-up: runner on the nodes, bytecode here
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in CLI_SIZES}
    try:
        for _ in range(runs):
            for name in CLI_SIZES:
                samples[name].append(_skyform(env, "exec", name, "true"))
        keeper_cpu = {name: _keeper_cpu(env, home, name, runs) for name in CLI_SIZES}
    finally:
        _skyform(env, "down", "-a", "-y")
    return samples, keeper_cpu


def _keepers_cpu(home: Path) -> float:
    """User + system seconds of the keepers serving `home` (not the client's children)."""
    total = 0.0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if b"skyform.exec.keeper" not in (proc / "cmdline").read_bytes():
                continue
            if f"SKYFORM_HOME={home}".encode() not in (proc / "environ").read_bytes():
                continue
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _keeper_cpu(env: dict[str, str], home: Path, name: str, runs: int) -> float:
    """The keepers' CPU per exec of `name`, over `runs` more execs of that cluster alone."""
    before = _keepers_cpu(home)
    for _ in range(runs):
        _skyform(env, "exec", name, "true")
    return (_keepers_cpu(home) - before) / runs


def report_cli(
    samples: dict[str, list[tuple[float, float]]], keeper_cpu: dict[str, float], load: str
) -> bool:
    runs = len(samples["one"])
    cores = os.cpu_count()
    print(f"warm `skyform exec CLUSTER true`, {runs} runs each, {cores} cores, load {load}")
    print(f"{'nodes':>5}  {'wall median (min-max)':>26}  {'client CPU median (min-max)':>30}")
    wall, cpu = {}, {}
    for name, count in CLI_SIZES.items():
        walls, cpus = [s[0] for s in samples[name]], [s[1] for s in samples[name]]
        wall[count], cpu[count] = statistics.median(walls), statistics.median(cpus)
        print(f"{count:>5}  {_fmt(walls):>26}  {_fmt(cpus):>30}")
    low, high = min(CLI_SIZES.values()), max(CLI_SIZES.values())
    extra = (cpu[high] - cpu[low]) / (high - low) * 1000
    ok = extra <= CPU_TARGET_MS
    print(f"8 nodes / 1 node, wall: {wall[high] / wall[low]:.2f}x")
    print(
        f"client CPU per additional node, warm exec: {extra:.2f} ms "
        f"(target <= {CPU_TARGET_MS:g} ms): {'met' if ok else 'MISSED'}"
    )
    kept = (keeper_cpu["eight"] - keeper_cpu["one"]) / (high - low) * 1000
    print(
        f"connection keeper CPU per additional node (its own process, not counted above): "
        f"{kept:.2f} ms"
    )
    return ok


# --- in-process sessions (--sessions) ---------------------------------------------------------


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
    from skyform.exec.run import open_cluster

    with open_cluster(cluster) as session:
        _true_everywhere(session)


def measure_sessions(nodes: SSHNodes, runs: int, files: int) -> None:
    from skyform.exec.run import open_cluster

    os.environ["SKYFORM_HOME"] = tempfile.mkdtemp(prefix="skyform-bench-")
    workdir = _workdir(Path(tempfile.mkdtemp(prefix="bench-workdir-")), files)
    rows = []
    for size in SIZES:
        cluster = make_cluster(nodes.handles()[:size], name=f"bench{size}")
        cold = _timed(lambda c=cluster: _connect_and_true(c), runs, f"cold{size}")
        with open_cluster(cluster) as session:
            _timed(lambda s=session: _true_everywhere(s), 3)  # warm-up
            warm = _timed(lambda s=session: _true_everywhere(s), runs * 3, f"warm{size}")
            first = _timed(lambda s=session: s.sync_workdir(workdir), 1)
            sync = _timed(lambda s=session: s.sync_workdir(workdir), runs)
            saved = os.environ["PATH"]
            os.environ["PATH"] = tempfile.mkdtemp(prefix="no-rsync-")  # SFTP fallback
            try:
                sftp = _timed(lambda s=session: s.sync_workdir(workdir), runs)
            finally:
                os.environ["PATH"] = saved
        rows.append((size, warm, cold, first, sync, sftp))
    print(f"\nin-process sessions, {files}-file workdir, {runs} runs\n")
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
    print(f"no-change sync of {files} files on 8 nodes: {statistics.median(eight[4]):.2f} s")
    print("client CPU per additional node in one process (rsync's ssh children not counted):")
    for kind, label in (("warm", "true on open connections"), ("cold", "connect + true")):
        extra = statistics.median(CPU[f"{kind}8"]) - statistics.median(CPU[f"{kind}1"])
        print(f"  {label}: {extra / 7 * 1000:.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=9, help="runs per measurement (median shown)")
    parser.add_argument("--sessions", action="store_true", help="also the in-process table")
    parser.add_argument("--files", type=int, default=1000, help="files in the synced workdir")
    args = parser.parse_args()
    reason = missing_requirements()
    if reason:
        print(f"skipped: {reason}")
        return 0
    with SSHNodes(sum(CLI_SIZES.values())) as nodes:
        before = Path("/proc/loadavg").read_text().split()[0]
        try:
            samples, keeper_cpu = measure_cli(nodes, args.n)
            after = Path("/proc/loadavg").read_text().split()[0]
            ok = report_cli(samples, keeper_cpu, f"{before} before, {after} after")
        except RuntimeError as exc:
            print(f"exec failed: {exc}")
            ok = False
        if args.sessions:
            measure_sessions(nodes, args.n, args.files)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
