#!/usr/bin/env python3
"""Start-up cost of the light commands, which must not load a Pulumi SDK (or PuLP, Fabric).

Median and min wall time, and median CPU time (user + system of the process: what a shared,
loaded machine disturbs least), over N fresh processes of `skyform --help`, `skyform status`
(no state yet), `skyform show PLAN` (text to a pipe, --json, --markdown), `skyform plan TASK
-o OUT` of single-task files (bench/plan_cases.py's a100x8 and cpus4) and `skyform export
PLAN -o DIR` (the export renders templates only), on a plan with aws, gcp, kubernetes and
local clusters; then, for scale, what importing each provider SDK costs on its own. Each
command runs once unmeasured first (bytecode caches written, as an installed package has
them). Targets (issue 17): --help <= 60 ms, status <= 0.1 s, show <= 0.12 s, a single-task
plan <= 0.14 s; the exit status is 1 when a median wall time misses one. The load average is
printed with the figures.

    .venv/bin/python bench/cli_startup.py [-n 9]
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "stacks" / "pulumi")]

sys.path.insert(0, str(REPO / "bench"))

from plan_cases import write_case  # noqa: E402
from pulumi_specs import AWS_G5, GCP_N1_V100, K8S_H100, LOCAL, plan_of, spec  # noqa: E402

from skyform.plan.planfile import write_plan  # noqa: E402

SKYFORM = str(Path(sys.executable).with_name("skyform"))
IMPORTS = {
    "import pulumi": "import pulumi",
    "pulumi_aws Instance": "from pulumi_aws.ec2 import Instance",
    "pulumi_gcp Instance": "from pulumi_gcp.compute import Instance",
    "pulumi_kubernetes Pod": "from pulumi_kubernetes.core.v1 import Pod",
}


TARGETS = {
    "skyform --help": 0.060,
    "skyform status": 0.100,
    "skyform show PLAN": 0.120,
    "skyform show PLAN --json": 0.120,
    "skyform show PLAN --markdown": 0.120,
    "skyform plan a100x8 -o OUT": 0.140,
    "skyform plan cpus4 -o OUT": 0.140,
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], runs: int, env: dict[str, str]) -> tuple[float, float, float]:
    """(median wall, min wall, median CPU) seconds of `runs` fresh processes."""
    subprocess.run(argv, capture_output=True, env=env, check=False)  # warm-up: bytecode, disk
    times, cpus = [], []
    for _ in range(runs):
        cpu, start = _cpu(), time.perf_counter()
        subprocess.run(argv, capture_output=True, env=env, check=False)
        times.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu)
    return statistics.median(times), min(times), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=9, help="runs per command")
    runs = parser.parse_args().n
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, SKYFORM_HOME=str(Path(tmp) / "home"), GOOGLE_CLOUD_PROJECT="p")
        # bytecode caching on, as in any installed package (some shells here turn it off)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        plan_file = Path(tmp) / "plan.json"
        plan = plan_of(
            spec(AWS_G5, name="a"), spec(GCP_N1_V100, name="g"), spec(K8S_H100, name="k"),
            spec(LOCAL, name="l"),
        )  # fmt: skip
        write_plan(plan, plan_file)
        rows = {
            "skyform --help": [SKYFORM, "--help"],
            "skyform status": [SKYFORM, "status"],
            "skyform show PLAN": [SKYFORM, "show", str(plan_file)],
            "skyform show PLAN --json": [SKYFORM, "show", str(plan_file), "--json"],
            "skyform show PLAN --markdown": [SKYFORM, "show", str(plan_file), "--markdown"],
            "skyform export PLAN -o DIR": [SKYFORM, "export", str(plan_file), "-o", tmp + "/x"],
        }
        for case in ("a100x8", "cpus4"):
            task = write_case(case, Path(tmp))
            out = str(Path(tmp) / f"{case}.plan.json")
            rows[f"skyform plan {case} -o OUT"] = [SKYFORM, "plan", str(task), "-o", out]
        rows.update({label: [sys.executable, "-c", code] for label, code in IMPORTS.items()})
        print(
            f"{'command':<32} {'median':>8} {'min':>8} {'cpu':>8}   ({runs} runs, "
            f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f})"
        )
        missed = 0
        for label, argv in rows.items():
            median, fastest, cpu = timed(argv, runs, env)
            target = TARGETS.get(label)
            verdict = "" if target is None else (" ok" if median <= target else f" OVER {target} s")
            missed += verdict.startswith(" OVER")
            print(f"{label:<32} {median:>7.3f}s {fastest:>7.3f}s {cpu:>7.3f}s{verdict}")
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
