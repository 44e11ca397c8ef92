"""skyform vs SkyPilot on the same catalog bytes and the same six planning cases, side by side.

    .venv/bin/python bench/vs_skypilot.py [--runs 3] [--cases a100x8 dag5] [--catalog DIR]

1. SkyPilot comes from PyPI into its own virtualenv, bench/.venv-skypilot (gitignored), created
   on first use (`--skypilot-version` pins it).
2. SkyPilot reads `~/.sky/catalogs/v8/<cloud>/vms.csv` and never downloads a file that exists
   without a `.meta/*.md5` next to it, so a private HOME gets the very AWS/GCP tables skyform
   plans with: the bundled ones, or those of `--catalog DIR` (a SkyPilot-layout directory, e.g.
   from bench/synth_catalog.py, which skyform gets through `skyform catalog refresh`). Usage
   collection is off; AWS and GCP are marked enabled without credentials by replacing
   `sky.check.get_cached_enabled_clouds_or_refresh` (see skypilot_driver.py).
3. Per case, medians of `--runs`:
   - whole process: skyform = wall time of a `skyform plan TASK -o out.json` process; SkyPilot =
     `import sky` + its first `sky.Optimizer.optimize(dag)` (it reads the catalog) in a fresh
     process (interpreter start and DAG construction not counted for SkyPilot);
   - in process: skyform's candidates + solve on a loaded catalog; SkyPilot's later ("warm")
     `optimize` calls in the same process.
4. Costs: each tool's chosen compute $/h (1 h per task, SkyPilot's default), and both
   placements priced with skyform's egress model ("total"), so they compare like for like.

Targets (issue 17; the exit status is 1 when one is missed): whole process >= 20x on the
single-task cases, in process >= 10x on every case, skyform's total <= SkyPilot's on every case.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from plan_cases import CASES, skypilot_docs, write_case  # noqa: E402
from plan_speed import (  # noqa: E402
    bench_env,
    case_home,
    install_catalog,
    optimizer_only,
    plan_process,
)

VENV = HERE / ".venv-skypilot"
PYTHON = VENV / "bin" / "python"
TABLES = {"aws/vms.csv": "aws_vms.csv", "gcp/vms.csv": "gcp_vms.csv"}
TABLES["common/accelerators.csv"] = "accelerators.csv"
SINGLE_TASK = ("a100x8", "cpus4")
WHOLE_TARGET, INPROC_TARGET = 20.0, 10.0


def ensure_skypilot(version: str | None) -> str:
    if not PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    probe = subprocess.run(
        [str(PYTHON), "-c", "import sky; print(sky.__version__)"], capture_output=True, text=True
    )
    if probe.returncode != 0 or (version and probe.stdout.strip() != version):
        package = f"skypilot=={version}" if version else "skypilot"
        subprocess.run([str(PYTHON), "-m", "pip", "install", "-q", package], check=True)
        probe = subprocess.run(
            [str(PYTHON), "-c", "import sky; print(sky.__version__)"],
            capture_output=True,
            text=True,
            check=True,
        )
    return probe.stdout.strip()


def private_home(root: Path, catalog: Path | None) -> Path:
    """A HOME whose ~/.sky/catalogs/v8 holds the AWS and GCP tables skyform plans with."""
    import gzip

    from skyform.plan.catalog import BUNDLED_DIR

    home = root / "skypilot-home"
    for target, bundled in TABLES.items():
        path = home / ".sky" / "catalogs" / "v8" / target
        path.parent.mkdir(parents=True, exist_ok=True)
        if catalog is not None and (catalog / target).is_file():
            path.write_bytes((catalog / target).read_bytes())
        else:
            path.write_bytes(gzip.decompress((BUNDLED_DIR / f"{bundled}.gz").read_bytes()))
    return home


def run_skypilot(name: str, home: Path, work: Path, timeout: float, repeat: int) -> dict:
    """One fresh SkyPilot process: import time and `repeat` optimize calls on the case."""
    tasks, edges = skypilot_docs(name)
    case = work / f"{name}.skypilot.json"
    case.write_text(json.dumps({"tasks": tasks, "edges": edges, "repeat": repeat}))
    env = bench_env(home)
    env.update(HOME=str(home), SKYPILOT_DISABLE_USAGE_COLLECTION="1")
    try:
        proc = subprocess.run(
            [str(PYTHON), str(HERE / "skypilot_driver.py"), str(case)],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}
    return json.loads(lines[-1])


def skypilot_side(name: str, home: Path, work: Path, timeout: float, runs: int) -> dict:
    """Medians over `runs` processes: cold (import + first optimize) and warm optimize."""
    procs = [run_skypilot(name, home, work, timeout, repeat=3) for _ in range(runs)]
    failed = [p for p in procs if "error" in p]
    if failed:
        return failed[0]
    cold = [p["import_s"] + p["optimize_s"][0] for p in procs]
    warm = [statistics.median(p["optimize_s"][1:]) for p in procs]
    warm_cpu = [statistics.median(p["optimize_cpu_s"][1:]) for p in procs]
    tasks = procs[-1]["tasks"]
    hourly = sum(t["hourly_cost"] for t in tasks)
    places = [(t["cloud"], t["region"], t["zone"]) for t in tasks]
    return {"version": procs[-1]["version"], "cold_s": statistics.median(cold), "warm_s":
            statistics.median(warm), "cold_runs_s": cold, "warm_runs_s": warm, "tasks": tasks,
            "warm_cpu_s": statistics.median(warm_cpu),
            "hourly": hourly, "total": hourly + egress_total(name, places)}  # fmt: skip


def egress_total(name: str, places: list[tuple[str, str | None, str | None]]) -> float:
    """USD of the case's data edges for these placements, with skyform's egress model."""
    from skyform.config import Config
    from skyform.plan.catalog import BUNDLED_DIR, Location, load_catalog

    catalog = load_catalog(Config(), source=BUNDLED_DIR)
    tasks, edges = skypilot_docs(name)
    total = 0.0
    for u, v in edges:
        gb = sum(tasks[u].get("outputs", {}).values())
        total += catalog.egress.cost(Location(*places[u]), Location(*places[v]), gb)
    return total


def skyform_side(name: str, work: Path, runs: int, template: Path | None) -> dict:
    task = write_case(name, work)
    home = case_home(work, f"skyform-{name}", template)
    out = work / f"{name}.plan.json"
    plan_process(task, home, out)  # warm-up: bytecode and disk caches
    walls = [plan_process(task, home, out) for _ in range(runs)]
    plan = json.loads(out.read_text())
    places = [
        (t["offer"]["cloud"], t["offer"]["region"], t["offer"]["zone"]) for t in plan["tasks"]
    ]
    hourly = sum(t["hourly_cost"] for t in plan["tasks"])
    catalog_dir = home / "catalog" if template is not None else None
    optimizer_s = optimizer_only(task, max(runs, 3), catalog_dir)[0]
    cpu_s = optimizer_cpu(task, max(runs, 3), catalog_dir)
    return {"wall_s": statistics.median(walls), "runs_s": walls, "optimizer_s": optimizer_s,
            "optimizer_cpu_s": cpu_s,
            "hourly": hourly, "total": hourly + egress_total(name, places)}  # fmt: skip


def optimizer_cpu(task: Path, runs: int, catalog_dir: Path | None) -> float:
    """Median CPU seconds of candidates + solve in this process, CBC's processes included."""
    import resource
    import time

    from skyform.config import Config
    from skyform.plan.catalog import BUNDLED_DIR, load_catalog
    from skyform.plan.optimizer import problem_for, solve
    from skyform.spec import load_task

    def cpu() -> float:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + children.ru_utime + children.ru_stime

    catalog = load_catalog(Config(), source=catalog_dir or BUNDLED_DIR)
    dag = load_task(task)
    solve(problem_for(dag, catalog))  # warm, as optimizer_only
    spent = []
    for _ in range(runs):
        start = cpu()
        solve(problem_for(dag, catalog))
        spent.append(cpu() - start)
    return statistics.median(spent)


def verdicts(name: str, mine: dict, theirs: dict) -> list[str]:
    """The targets this case misses (empty when it meets all of them); a SkyPilot run that
    did not finish misses them all."""
    if "error" in theirs:
        return ["SkyPilot did not finish"]
    missed = []
    whole = theirs["cold_s"] / mine["wall_s"]
    inproc = theirs["warm_s"] / mine["optimizer_s"]
    if name in SINGLE_TASK and whole < WHOLE_TARGET:
        missed.append(f"whole process {whole:.1f}x < {WHOLE_TARGET:g}x")
    if inproc < INPROC_TARGET:
        missed.append(f"in process {inproc:.1f}x < {INPROC_TARGET:g}x")
    if mine["total"] > theirs["total"] + 1e-9:
        missed.append(f"cost ${mine['total']:.4f} > SkyPilot's ${theirs['total']:.4f}")
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--catalog", type=Path, help="a SkyPilot-layout catalog directory")
    parser.add_argument("--timeout", type=float, default=1800.0, help="per SkyPilot process")
    parser.add_argument("--skypilot-version")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    version = ensure_skypilot(args.skypilot_version)
    work = Path(tempfile.mkdtemp(prefix="skyform-vs-skypilot-"))
    home = private_home(work, args.catalog)
    template = None
    if args.catalog is not None:
        template = work / "template-home"
        install_catalog(args.catalog, template)
    print(f"SkyPilot {version} (bench/.venv-skypilot); catalog: {args.catalog or 'bundled'} "
          f"(AWS + GCP tables, the same bytes for both); medians of {args.runs} runs; "
          f"load average {load_average()}")  # fmt: skip
    print(
        f"{'case':<8} {'skyform':>8} {'sky import+opt':>14} {'x whole':>8}  "
        f"{'optimizer':>9} {'sky warm':>9} {'x inproc':>8} {'opt cpu':>8} {'sky cpu':>8}  "
        f"{'$/h skyform':>11} {'$/h sky':>9}  "
        f"{'total skyform':>13} {'total sky':>9}"
    )
    rows, missed = [], []
    for name in args.cases:
        mine = skyform_side(name, work, args.runs, template)
        theirs = skypilot_side(name, home, work, args.timeout, args.runs)
        rows.append({"case": name, "skyform": mine, "skypilot": theirs})
        if "error" in theirs:
            print(f"{name:<8} {mine['wall_s']:>8.3f}  SkyPilot: {theirs['error']}")
            missed += [f"{name}: {m}" for m in verdicts(name, mine, theirs)]
            continue
        print(
            f"{name:<8} {mine['wall_s']:>8.3f} {theirs['cold_s']:>14.3f} "
            f"{theirs['cold_s'] / mine['wall_s']:>7.1f}x  {mine['optimizer_s']:>9.4f} "
            f"{theirs['warm_s']:>9.4f} {theirs['warm_s'] / mine['optimizer_s']:>7.1f}x "
            f"{mine['optimizer_cpu_s']:>8.4f} {theirs['warm_cpu_s']:>8.4f}  "
            f"{mine['hourly']:>11.4f} {theirs['hourly']:>9.4f}  {mine['total']:>13.4f} "
            f"{theirs['total']:>9.4f}"
        )
        missed += [f"{name}: {m}" for m in verdicts(name, mine, theirs)]
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"skypilot": version, "cases": rows}, indent=2) + "\n")
    lines, status = conclusion(missed)
    print("\n".join(lines))
    print(f"load average at the end: {load_average()}")
    return status


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:  # not Linux
        return "n/a"


def conclusion(missed: list[str]) -> tuple[list[str], int]:
    """The closing lines and the exit status: 1 when a target is missed, else 0."""
    lines = [
        f"targets: whole process >= {WHOLE_TARGET:g}x on {', '.join(SINGLE_TASK)}; in process "
        f">= {INPROC_TARGET:g}x and same or lower cost on every case"
    ]
    lines += [f"  MISSED {line}" for line in missed]
    lines.append("all targets met" if not missed else f"{len(missed)} target(s) missed")
    return lines, 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
