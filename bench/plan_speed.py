"""Planning speed: `skyform plan TASK -o out.json` wall time from a fresh process, and the
optimizer alone in-process, on the bundled catalog, for the six cases of plan_cases.py.

    .venv/bin/python bench/plan_speed.py [--runs 5] [--json bench/results/plan_speed.json]

Targets: single task <= 0.3 s, 50-task chain <= 1 s, 20-task DAG <= 5 s (whole process).
Each process gets a private, empty SKYFORM_HOME, so no refreshed catalog, config or state
changes what is measured; one unmeasured warm-up run per case writes bytecode caches, as an
installed package has them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan_cases import CASES, write_case

TARGETS = {"a100x8": 0.3, "cpus4": 0.3, "chain50": 1.0, "dag20": 5.0}


def skyform_command() -> list[str]:
    script = Path(sys.executable).with_name("skyform")
    return [str(script)] if script.exists() else [sys.executable, "-m", "skyform.cli.main"]


def bench_env(home: Path) -> dict[str, str]:
    """The environment of measured processes: bytecode caching on (as in any installed
    package; PYTHONDONTWRITEBYTECODE would make every run recompile every module)."""
    env = dict(os.environ, SKYFORM_HOME=str(home), NO_COLOR="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def plan_process(task: Path, home: Path, out: Path) -> float:
    """Wall seconds of one `skyform plan` process (exit 0 or 2 both mean "planned")."""
    env = bench_env(home)
    start = time.perf_counter()
    proc = subprocess.run(
        [*skyform_command(), "plan", str(task), "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 2):
        raise SystemExit(f"skyform plan {task.name} failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed


def optimizer_only(task: Path, runs: int) -> tuple[float, float, dict]:
    """(median seconds of candidates + solve, median seconds of solve, stats) in-process."""
    from skyform.config import Config
    from skyform.plan.catalog import BUNDLED_DIR, load_catalog
    from skyform.plan.optimizer import problem_for, solve
    from skyform.spec import load_task

    catalog = load_catalog(Config(), source=BUNDLED_DIR)
    dag = load_task(task)
    problem_for(dag, catalog)  # warm the catalog's per-bucket indexes, as one plan would
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
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="skyform-plan-speed-"))
    results = []
    print(f"{'case':<9} {'plan (s)':>9} {'min':>7} {'optimizer':>10} {'solve':>8}  method / notes")
    for name in args.cases:
        task = write_case(name, work)
        home = work / f"home-{name}"
        home.mkdir()
        plan_process(task, home, work / f"{name}.plan.json")  # warm-up: bytecode, disk cache
        walls = [plan_process(task, home, work / f"{name}.plan.json") for _ in range(args.runs)]
        total, solve_s, stats = optimizer_only(task, args.runs)
        wall = statistics.median(walls)
        target = TARGETS.get(name)
        verdict = "" if target is None else (" ok" if wall <= target else f" OVER {target} s")
        print(
            f"{name:<9} {wall:>9.3f} {min(walls):>7.3f} {total:>10.3f} {solve_s:>8.3f}"
            f"  {stats['method']}, {stats['candidates']} candidates, {stats['pruned']} pruned, "
            f"{stats['ilp_solves']} CBC solves{verdict}"
        )
        results.append(
            {
                "case": name,
                "plan_wall_median_s": wall,
                "plan_wall_runs_s": walls,
                "optimizer_s": total,
                "solve_s": solve_s,
                "target_s": target,
                **stats,
            }
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return (
        0
        if all(r["target_s"] is None or r["plan_wall_median_s"] <= r["target_s"] for r in results)
        else 1
    )


if __name__ == "__main__":
    raise SystemExit(main())
