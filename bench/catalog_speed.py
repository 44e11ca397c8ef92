#!/usr/bin/env python3
"""How fast a fresh process can load the bundled catalog and answer its first query.

Each measurement runs in a new `python -c` process with an empty SKYFORM_HOME (no config.yaml,
no refreshed catalog), so it counts interpreter start-up, imports, opening the catalog index
and reading the rows a query needs, as a `skyform plan` would pay them. Reported: median (and
min/max) over N runs of

- `python -c pass`                    interpreter start-up alone, for reference;
- `import skyform.plan.catalog`       import cost of the catalog package;
- load + first query                  wall time from process start to the first query's answer,
                                      for a few typical first queries;
- in-process split                    import / load / query / digest timings inside one process.

    .venv/bin/python bench/catalog_speed.py [-n 15]
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

QUERIES = {
    "A100 (any count)": "accelerator='A100'",
    "V100:8 on-demand": "accelerator='V100', accelerator_count=8, spot=False",
    "cpus 4+ cheapest 50": "cpus=4, accelerator_count=0, limit=50",
    "cpus 4+ (all ~8k offers)": "cpus=4, accelerator_count=0",
}

SPLIT = """
import time, json
t0 = time.perf_counter()
from skyform.plan.catalog import load_catalog
t1 = time.perf_counter()
cat = load_catalog()
t2 = time.perf_counter()
cat.query(accelerator='A100')
t3 = time.perf_counter()
cat.query(cpus=4, accelerator_count=0)
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "query A100": t3 - t2,
                  "query cpus 4+ (all)": t4 - t3, "offers": cat.offer_count()}))
"""


def _run(code: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _stats(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    return f"median {statistics.median(ms):7.1f} ms   (min {ms[0]:.1f}, max {ms[-1]:.1f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="runs per measurement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "SKYFORM_HOME": home, "PYTHONDONTWRITEBYTECODE": "0"}
        _run("import skyform.plan.catalog", env)  # warm the bytecode cache once
        rows = [("python -c pass", "pass"), ("import skyform.plan.catalog", None)]
        rows[1] = ("import skyform.plan.catalog", "import skyform.plan.catalog")
        for label, query in QUERIES.items():
            code = f"from skyform.plan.catalog import load_catalog\nload_catalog().query({query})"
            rows.append((f"load + first query: {label}", code))
        print(f"fresh-process wall time, {args.n} runs each ({sys.executable})")
        for label, code in rows:
            samples = [_run(code, env) for _ in range(args.n)]
            print(f"  {label:<48} {_stats(samples)}")
        splits = []
        for _ in range(args.n):
            out = subprocess.run(
                [sys.executable, "-c", SPLIT], env=env, check=True, capture_output=True, text=True
            )
            splits.append(json.loads(out.stdout))
        print("in-process split (median):")
        for key in ("import", "load", "query A100", "query cpus 4+ (all)"):
            value = statistics.median(s[key] for s in splits) * 1000
            print(f"  {key:<48} {value:7.1f} ms")
        print(f"  offers in the bundled catalog: {splits[0]['offers']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
