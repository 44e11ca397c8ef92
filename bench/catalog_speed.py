#!/usr/bin/env python3
"""How fast a fresh process can load the catalog and answer its first queries — on the bundled
catalog and, side by side, on another one (`--catalog DIR`, e.g. bench/synth_catalog.py's 10×
catalog, installed with `skyform catalog refresh --url file://DIR` as a user would).

Each measurement runs in a new `python -c` process whose SKYFORM_HOME holds no config.yaml
and only the catalog under test, with bytecode caching on (one unmeasured warm-up run first),
so it counts interpreter start-up, imports, opening the catalog index and reading the rows a
query needs, as a `skyform plan` pays them. Reported per catalog: median (and min) wall time
and median CPU time (user + sys of the child, RUSAGE_CHILDREN) over N runs of

- `python -c pass`                    interpreter start-up alone, for reference;
- `import skyform.plan.catalog`       import cost of the catalog package;
- load + first query                  process start to the first query's answer, for the
                                      queries the optimizer asks (cheapest per place);
- in-process split                    load / each query, inside one process (medians).

The point of the comparison: the catalog is an index read lazily, so a catalog 10× bigger
must cost (nearly) the same — only the rows a query returns grow, with the places it has.

    .venv/bin/python bench/catalog_speed.py [-n 15] [--catalog DIR]
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

# (label, Catalog.query keywords): what the optimizer asks for a100x8 and cpus4 (plan_cases),
# then an unfiltered CPU query that materialises every matching offer.
QUERIES = {
    "A100:8 cheapest per place": (
        "accelerator='A100', accelerator_count=8, spot=False, arch='x86_64', "
        "cheapest_per_place=True"
    ),
    "cpus 4+ cheapest per place": (
        "cpus=4, accelerator_count=0, spot=False, min_memory_per_vcpu=4, arch='x86_64', "
        "cheapest_per_place=True"
    ),
    "cpus 4+ cheapest 50": "cpus=4, accelerator_count=0, limit=50",
    "cpus 4+ (every offer)": "cpus=4, accelerator_count=0",
}

SPLIT = """
import json, time
from skyform.plan.catalog import load_catalog
t = time.perf_counter()
cat = load_catalog()
out = {"load": time.perf_counter() - t, "offers": cat.offer_count(), "rows": {}}
for label, query in QUERIES.items():
    t = time.perf_counter()
    found = eval(f"cat.query({query})")
    out[label] = time.perf_counter() - t
    out["rows"][label] = len(found)
print(json.dumps(out))
"""


def _run(code: str, env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def _home(work: Path, name: str, source: Path | None) -> dict[str, str]:
    """The environment of a fresh SKYFORM_HOME holding `source` refreshed (None: bundled)."""
    home = work / name
    home.mkdir()
    env = {**os.environ, "SKYFORM_HOME": str(home)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # any value, even "0", turns caching off
    if source is not None:
        argv = [sys.executable, "-m", "skyform.cli.main", "catalog", "refresh"]
        subprocess.run(
            [*argv, "--url", source.resolve().as_uri()], env=env, check=True, capture_output=True
        )
    return env


def measure(env: dict[str, str], runs: int) -> dict[str, tuple[float, float, float]]:
    """label -> (median wall, min wall, median CPU) seconds, plus the in-process split."""
    rows = {"python -c pass": "pass", "import skyform.plan.catalog": "import skyform.plan.catalog"}
    for label, query in QUERIES.items():
        rows[f"load + first query: {label}"] = (
            f"from skyform.plan.catalog import load_catalog\nload_catalog().query({query})"
        )
    _run(rows["load + first query: A100:8 cheapest per place"], env)  # warm-up: bytecode
    found: dict = {}
    for label, code in rows.items():
        samples = [_run(code, env)[:2] for _ in range(runs)]
        walls = [w for w, _ in samples]
        found[label] = (
            statistics.median(walls),
            min(walls),
            statistics.median(c for _, c in samples),
        )
    code = f"QUERIES = {QUERIES!r}\n{SPLIT}"
    splits = [json.loads(_run(code, env)[2]) for _ in range(runs)]
    found["split"] = {key: statistics.median(s[key] for s in splits) for key in ("load", *QUERIES)}
    found["offers"] = splits[0]["offers"]
    found["rows"] = splits[0]["rows"]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="runs per measurement")
    parser.add_argument("--catalog", type=Path, help="a SkyPilot-layout catalog directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        catalogs = {"bundled": _home(work, "bundled", None)}
        if args.catalog is not None:
            catalogs[str(args.catalog)] = _home(work, "other", args.catalog)
        print(f"load average {Path('/proc/loadavg').read_text().split()[:3]}; {args.n} runs")
        results = {name: measure(env, args.n) for name, env in catalogs.items()}
        print(f"load average {Path('/proc/loadavg').read_text().split()[:3]} at the end")
    for name, found in results.items():
        print(f"\n{name}: {found['offers']} offers")
        print(f"  {'fresh process':<54} {'wall med':>9} {'min':>7} {'CPU med':>8}")
        for label, value in found.items():
            if isinstance(value, tuple):
                wall, fastest, cpu = (x * 1000 for x in value)
                print(f"  {label:<54} {wall:7.1f}ms {fastest:5.1f}ms {cpu:6.1f}ms")
        print("  in-process split (median)")
        for key, seconds in found["split"].items():
            rows = found["rows"].get(key)
            more = f"   {rows} offers returned" if rows is not None else ""
            print(f"    {key:<52} {seconds * 1000:7.2f}ms{more}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
