"""Planning speed: `skyform plan TASK -o out.json` wall time from a fresh process, and the
optimizer alone in-process, for the six cases of plan_cases.py — on the bundled catalog, or on
another one (`--catalog DIR`, a SkyPilot-layout directory such as bench/synth_catalog.py
writes; it is installed with `skyform catalog refresh --url file://DIR`, as a user would).

    .venv/bin/python bench/plan_speed.py [--runs 5] [--catalog DIR] [--json out.json]

Targets — bundled catalog: single task <= 0.3 s, 50-task chain <= 1 s, 20-task DAG <= 5 s;
a catalog 10x the bundled one (`--catalog`): single task <= 0.2 s, 20-task DAG <= 1 s (whole
process). Wall and CPU (user + system of the child) medians are printed, with the load
average. Each process gets a private SKYFORM_HOME (no config or state; only the catalog
under test), and one unmeasured warm-up run per case writes bytecode caches, as an installed
package has them. "imports" is what `python -X importtime` counts for the same command (the
rest is interpreter start, catalog, optimizer, rendering and writing the plan).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan_cases import CASES, write_case

TARGETS = {"a100x8": 0.3, "cpus4": 0.3, "chain50": 1.0, "dag20": 5.0}
TARGETS_10X = {"a100x8": 0.2, "cpus4": 0.2, "dag20": 1.0}


def skyform_command() -> list[str]:
    script = Path(sys.executable).with_name("skyform")
    return [str(script)] if script.exists() else [sys.executable, "-m", "skyform.cli.main"]


def bench_env(home: Path) -> dict[str, str]:
    """The environment of measured processes: bytecode caching on (as in any installed
    package; PYTHONDONTWRITEBYTECODE would make every run recompile every module)."""
    env = dict(os.environ, SKYFORM_HOME=str(home), NO_COLOR="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def install_catalog(source: Path, home: Path) -> None:
    """`skyform catalog refresh --url file://SOURCE` into `home` (a user's own refresh)."""
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [*skyform_command(), "catalog", "refresh", "--url", source.resolve().as_uri()],
        env=bench_env(home),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"skyform catalog refresh of {source} failed:\n{proc.stderr}")


def case_home(work: Path, name: str, template: Path | None) -> Path:
    """A fresh SKYFORM_HOME for one case, holding a copy of the template's catalog, if any."""
    home = work / f"home-{name}"
    home.mkdir()
    if template is not None:
        shutil.copytree(template / "catalog", home / "catalog")
    return home


def plan_process(task: Path, home: Path, out: Path) -> float:
    """Wall seconds of one `skyform plan` process (exit 0 or 2 both mean "planned")."""
    return timed_plan(task, home, out)[0]


def timed_plan(task: Path, home: Path, out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one `skyform plan` process (exit 0 or 2 both mean "planned");
    CPU is the child's user + system time, steadier than wall time on a loaded machine."""
    env = bench_env(home)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [*skyform_command(), "plan", str(task), "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 2):
        raise SystemExit(f"skyform plan {task.name} failed ({proc.returncode}):\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def import_seconds(task: Path, home: Path, out: Path) -> float:
    """Seconds `python -X importtime` counts for the top-level imports of one plan process."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "skyform.cli.main", *("plan", task, "-o", out)],
        env=bench_env(home),
        capture_output=True,
        text=True,
    )
    total = 0
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:") :].split("|")
        if not name[1:].startswith(" "):  # a top-level import (nested ones are indented)
            total += int(cumulative)
    return total / 1e6


def optimizer_only(task: Path, runs: int, catalog_dir: Path | None = None) -> tuple:
    """(median seconds of candidates + solve, median seconds of solve, stats) in-process, on
    the bundled catalog or on the catalog in `catalog_dir` (an installed refreshed copy)."""
    from skyform.config import Config
    from skyform.plan.catalog import BUNDLED_DIR, load_catalog
    from skyform.plan.optimizer import problem_for, solve
    from skyform.spec import load_task

    catalog = load_catalog(Config(), source=catalog_dir or BUNDLED_DIR)
    dag = load_task(task)
    problem_for(dag, catalog)  # warm the SQLite page cache, as one plan would
    totals, solves, stats = [], [], {}
    for _ in range(runs):
        t0 = time.perf_counter()
        problem = problem_for(dag, catalog)
        t1 = time.perf_counter()
        solution = solve(problem)
        t2 = time.perf_counter()
        totals.append(t2 - t0)
        solves.append(t2 - t1)
        stats = dict(solution.stats, method=solution.method, cost=round(solution.cost, 6))
    return statistics.median(totals), statistics.median(solves), stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--catalog", type=Path, help="a SkyPilot-layout catalog directory")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="skyform-plan-speed-"))
    template = None
    if args.catalog is not None:
        template = work / "template-home"
        install_catalog(args.catalog, template)
    targets = TARGETS_10X if args.catalog else TARGETS
    results = []
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    print(f"catalog: {args.catalog or 'bundled'}; {args.runs} runs, {os.cpu_count()} cores")
    print(f"load average at the start: {' '.join(load) or 'unknown'}")
    print(
        f"{'case':<9} {'plan (s)':>9} {'min':>7} {'CPU':>7} {'imports':>8} {'optimizer':>10} "
        f"{'solve':>8}  method / notes"
    )
    for name in args.cases:
        task = write_case(name, work)
        home = case_home(work, name, template)
        out = work / f"{name}.plan.json"
        plan_process(task, home, out)  # warm-up: bytecode, disk cache
        runs = [timed_plan(task, home, out) for _ in range(args.runs)]
        walls = [wall for wall, _ in runs]
        cpu = statistics.median(c for _, c in runs)
        imports = import_seconds(task, home, out)
        catalog_dir = home / "catalog" if template is not None else None
        total, solve_s, stats = optimizer_only(task, args.runs, catalog_dir)
        wall = statistics.median(walls)
        target = targets.get(name)
        verdict = "" if target is None else (" ok" if wall <= target else f" OVER {target} s")
        print(
            f"{name:<9} {wall:>9.3f} {min(walls):>7.3f} {cpu:>7.3f} {imports:>8.3f} {total:>10.3f} "
            f"{solve_s:>8.3f}  {stats['method']}, {stats['candidates']} candidates, "
            f"{stats['pruned']} pruned, {stats['ilp_solves']} CBC solves{verdict}"
        )
        results.append(
            {
                "case": name,
                "catalog": str(args.catalog or "bundled"),
                "plan_wall_median_s": wall,
                "plan_wall_runs_s": walls,
                "plan_cpu_median_s": cpu,
                "imports_s": imports,
                "optimizer_s": total,
                "solve_s": solve_s,
                "target_s": target,
                **stats,
            }
        )
    if Path("/proc/loadavg").exists():
        print(f"load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    missed = [r for r in results if (r["target_s"] or float("inf")) < r["plan_wall_median_s"]]
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
