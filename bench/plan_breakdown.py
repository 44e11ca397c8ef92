#!/usr/bin/env python3
"""Where the time of a cold `skyform plan TASK -o OUT` goes, split by what it is spent on.

Each run is a fresh process (bytecode caches on, a private SKYFORM_HOME with no config,
the bundled catalog) that plans bench/plan_cases.py's single-task cases through the same
fast path the console script takes (skyform.cli.fastpath), with timers on:

- interpreter      `python -c pass` on its own (start-up and site, the editable finder);
- pydantic import  importing every pydantic module the plan ends up loading (pydantic,
                   pydantic_core, annotated_types, typing_extensions, typing_inspection);
- model classes    creating skyform's pydantic model classes (ModelMetaclass.__new__);
- schema builds    pydantic building a model's validator and serializer on its first use
                   (the models defer it: `defer_build=True`, skyform/frozen.py);
- dataclasses      creating skyform's dataclasses (`dataclasses` writes and compiles
                   their methods, ~0.6 ms a class on Python 3.11);
- the rest         every other import (yaml, sqlite3, the rest of skyform) and the work:
                   reading the task, the catalog, the optimizer, rendering, writing the plan.

Nested timers count once (a schema build inside a class creation counts as the class).
Medians of `-n` runs, in milliseconds; the figures say what a pydantic-free plan path would
save, which is the lever left for issue 17's whole-process target.

    .venv/bin/python bench/plan_breakdown.py [-n 9]
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from plan_cases import write_case  # noqa: E402
from plan_speed import bench_env  # noqa: E402

PYDANTIC_FAMILY = ("pydantic", "annotated_types", "typing_extensions", "typing_inspection")
PARTS = ("pydantic import", "model classes", "schema builds", "dataclasses", "the rest")

# Runs inside the measured process: argv = [task, out, json list of pydantic modules].
DRIVER = r"""
import contextlib, importlib, io, json, sys, time
start = time.perf_counter()
task, out, modules = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
spent = {"pydantic import": 0.0, "model classes": 0.0, "schema builds": 0.0, "dataclasses": 0.0}
for name in modules:
    importlib.import_module(name)
spent["pydantic import"] = time.perf_counter() - start
depth = [0]

def timer(key, function):
    def timed(*args, **kwargs):
        depth[0] += 1
        began = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                spent[key] += time.perf_counter() - began
    return timed

import dataclasses
from pydantic._internal import _model_construction as construction
metaclass = construction.ModelMetaclass
metaclass.__new__ = timer("model classes", metaclass.__new__)
construction.complete_model_class = timer("schema builds", construction.complete_model_class)
dataclasses._process_class = timer("dataclasses", dataclasses._process_class)
from skyform.cli.fastpath import answer
with contextlib.redirect_stdout(io.StringIO()):
    code = answer(["plan", task, "-o", out])
total = time.perf_counter() - start
spent["the rest"] = total - sum(spent.values())
print(json.dumps({"code": code, "total": total, **spent}))
"""

LOADED = """
import contextlib, io, json, sys
from skyform.cli.fastpath import answer
with contextlib.redirect_stdout(io.StringIO()):
    answer(["plan", sys.argv[1], "-o", sys.argv[2]])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in sys.argv[3].split(","))))
"""


def pydantic_modules(task: Path, out: Path, env: dict[str, str]) -> list[str]:
    """The pydantic modules a plan of `task` loads, in import-safe (sorted) order."""
    family = ",".join((*PYDANTIC_FAMILY, "pydantic_core"))
    argv = [sys.executable, "-c", LOADED, str(task), str(out), family]
    return json.loads(subprocess.run(argv, env=env, capture_output=True, check=True).stdout)


def interpreter_ms(runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def breakdown(task: Path, out: Path, runs: int, env: dict[str, str]) -> dict[str, float]:
    modules = pydantic_modules(task, out, env)  # also the unmeasured warm-up run
    samples: list[dict] = []
    walls = []
    for _ in range(runs):
        out.unlink(missing_ok=True)
        argv = [sys.executable, "-c", DRIVER, str(task), str(out), json.dumps(modules)]
        began = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        walls.append(time.perf_counter() - began)
        sample = json.loads(done.stdout.strip().splitlines()[-1])
        if sample["code"] != 0:
            raise SystemExit(f"plan of {task} exited {sample['code']}: {done.stderr}")
        samples.append(sample)
    found = {part: statistics.median(s[part] for s in samples) * 1000 for part in PARTS}
    found["in process"] = statistics.median(s["total"] for s in samples) * 1000
    found["process wall"] = statistics.median(walls) * 1000
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=9, help="runs per case")
    runs = parser.parse_args().n
    with tempfile.TemporaryDirectory() as tmp:
        env = bench_env(Path(tmp) / "home")
        start_ms = interpreter_ms(runs, env)
        results = {}
        for case in ("a100x8", "cpus4"):
            task = write_case(case, Path(tmp))
            results[case] = breakdown(task, Path(tmp) / f"{case}.plan.json", runs, env)
    print(f"cold `skyform plan CASE -o OUT`, medians of {runs} runs in ms, 2 cores, load "
          f"{os.getloadavg()[0]:.2f}; interpreter start-up alone: {start_ms:.0f} ms")  # fmt: skip
    print(f"{'':<18}" + "".join(f"{case:>10}" for case in results))
    for part in (*PARTS, "in process", "process wall"):
        print(f"{part:<18}" + "".join(f"{r[part]:>10.0f}" for r in results.values()))
    pydantic = {c: sum(r[p] for p in PARTS[:3]) for c, r in results.items()}
    print(f"{'pydantic, all':<18}" + "".join(f"{ms:>10.0f}" for ms in pydantic.values()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
