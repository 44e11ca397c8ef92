"""skyform vs SkyPilot on the same catalog and the same six planning cases, side by side.

    .venv/bin/python bench/vs_skypilot.py [--runs 3] [--cases a100x8 dag5] [--timeout 1800]

1. SkyPilot comes from PyPI into its own virtualenv, bench/.venv-skypilot (gitignored), created
   on first use (`--skypilot-version` pins it).
2. SkyPilot reads `~/.sky/catalogs/v8/<cloud>/vms.csv` and never downloads a file that exists
   without a `.meta/*.md5` next to it, so a private HOME gets skyform's bundled AWS/GCP tables
   (the very bytes skyform plans with). Usage collection is off
   (SKYPILOT_DISABLE_USAGE_COLLECTION=1); AWS and GCP are marked enabled without credentials by
   replacing `sky.check.get_cached_enabled_clouds_or_refresh` (see skypilot_driver.py).
3. Per case: skyform = wall time of whole `skyform plan TASK -o out.json` processes (median;
   "optimizer" = candidates + solve in-process, for reference); SkyPilot =
   `sky.Optimizer.optimize(dag)` inside one process, first call ("cold": it reads the catalog)
   and second call ("warm"). Import and DAG construction are not counted for SkyPilot. The
   speed-ups (x) compare skyform's whole process with SkyPilot's call.
4. Costs: each tool's chosen compute $/h (1 h per task, SkyPilot's default), and both
   placements priced with skyform's egress model ("total"), so they compare like for like.
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
from plan_speed import bench_env, optimizer_only, plan_process  # noqa: E402

VENV = HERE / ".venv-skypilot"
PYTHON = VENV / "bin" / "python"
TABLES = {"aws/vms.csv": "aws_vms.csv", "gcp/vms.csv": "gcp_vms.csv"}
TABLES["common/accelerators.csv"] = "accelerators.csv"


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


def private_home(root: Path) -> Path:
    """A HOME whose ~/.sky/catalogs/v8 holds skyform's bundled AWS and GCP tables."""
    import gzip

    from skyform.plan.catalog import BUNDLED_DIR

    home = root / "skypilot-home"
    for target, bundled in TABLES.items():
        path = home / ".sky" / "catalogs" / "v8" / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.decompress((BUNDLED_DIR / f"{bundled}.gz").read_bytes()))
    return home


def run_skypilot(name: str, home: Path, work: Path, timeout: float) -> dict:
    tasks, edges = skypilot_docs(name)
    case = work / f"{name}.skypilot.json"
    case.write_text(json.dumps({"tasks": tasks, "edges": edges, "repeat": 2}))
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


def skyform_side(name: str, work: Path, runs: int) -> dict:
    task = write_case(name, work)
    home = work / f"skyform-home-{name}"
    home.mkdir()
    out = work / f"{name}.plan.json"
    plan_process(task, home, out)  # warm-up: bytecode and disk caches
    walls = [plan_process(task, home, out) for _ in range(runs)]
    plan = json.loads(out.read_text())
    places = [
        (t["offer"]["cloud"], t["offer"]["region"], t["offer"]["zone"]) for t in plan["tasks"]
    ]
    hourly = sum(t["hourly_cost"] for t in plan["tasks"])
    optimizer_s = optimizer_only(task, runs)[0]
    return {"wall_s": statistics.median(walls), "runs_s": walls, "optimizer_s": optimizer_s,
            "hourly": hourly, "total": hourly + egress_total(name, places)}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--timeout", type=float, default=1800.0, help="per SkyPilot case")
    parser.add_argument("--skypilot-version")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    version = ensure_skypilot(args.skypilot_version)
    work = Path(tempfile.mkdtemp(prefix="skyform-vs-skypilot-"))
    home = private_home(work)
    print(f"SkyPilot {version} (bench/.venv-skypilot); catalog: skyform's bundled AWS + GCP tables")
    print(
        f"{'case':<8} {'skyform plan':>12} {'(optimizer)':>11} {'sky cold':>9} {'sky warm':>9} "
        f"{'x cold':>7} {'x warm':>7}  {'$/h skyform':>11} {'$/h sky':>9}  "
        f"{'total skyform':>13} {'total sky':>9}"
    )
    rows, ok = [], True
    for name in args.cases:
        mine = skyform_side(name, work, args.runs)
        theirs = run_skypilot(name, home, work, args.timeout)
        row = {"case": name, "skyform": mine, "skypilot": theirs}
        rows.append(row)
        if "error" in theirs:
            print(f"{name:<8} {mine['wall_s']:>12.3f}  SkyPilot: {theirs['error']}")
            ok = False
            continue
        cold, warm = theirs["optimize_s"][0], theirs["optimize_s"][-1]
        hourly = sum(t["hourly_cost"] for t in theirs["tasks"])
        places = [(t["cloud"], t["region"], t["zone"]) for t in theirs["tasks"]]
        total = hourly + egress_total(name, places)
        row["skypilot"].update(hourly=hourly, total=total)
        print(
            f"{name:<8} {mine['wall_s']:>12.3f} {mine['optimizer_s']:>11.3f} "
            f"{cold:>9.3f} {warm:>9.3f} "
            f"{cold / mine['wall_s']:>6.1f}x {warm / mine['wall_s']:>6.1f}x  "
            f"{mine['hourly']:>11.4f} {hourly:>9.4f}  {mine['total']:>13.4f} {total:>9.4f}"
        )
        ok &= cold >= 10 * mine["wall_s"] and mine["total"] <= total + 1e-9
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"skypilot": version, "cases": rows}, indent=2) + "\n")
    print(
        "targets (>= 10x the cold optimize call, same or lower cost):", "met" if ok else "NOT met"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
