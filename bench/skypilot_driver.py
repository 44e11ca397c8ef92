"""Runs inside bench/.venv-skypilot (SkyPilot from PyPI; not skyform's environment).

    python skypilot_driver.py CASE.json  ->  JSON on stdout

CASE.json: {"tasks": [task YAML dicts], "edges": [[u, v], ...], "repeat": N}. Builds a
`sky.Dag`, marks AWS and GCP enabled (SkyPilot normally learns that from `sky check`, which
needs credentials: here `sky.check.get_cached_enabled_clouds_or_refresh` is replaced), and
times `sky.Optimizer.optimize` on a fresh copy of the DAG `repeat` times in this one process
(the first call reads the catalog CSVs: "cold"; later calls are "warm"), in wall seconds and
CPU seconds (this process + the CBC processes SkyPilot starts for a DAG).
"""

from __future__ import annotations

import json
import resource
import sys
import time


def build(case: dict):
    import sky

    with sky.Dag() as dag:
        tasks = [sky.Task.from_yaml_config(dict(doc)) for doc in case["tasks"]]
    for u, v in case["edges"]:
        dag.add_edge(tasks[u], tasks[v])
    return dag, tasks


def chosen(task) -> dict:
    res = task.best_resources
    accelerators = res.accelerators or {}
    hourly = res.get_cost(3600) * task.num_nodes
    return {
        "name": task.name,
        "cloud": str(res.cloud).lower(),
        "region": res.region,
        "zone": res.zone,
        "instance_type": res.instance_type,
        "spot": bool(res.use_spot),
        "accelerators": {k: float(v) for k, v in accelerators.items()},
        "hourly_cost": hourly,
    }


def cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def main() -> None:
    t0 = time.perf_counter()
    import sky
    from sky import check as sky_check
    from sky import clouds

    enabled = [clouds.AWS(), clouds.GCP()]
    sky_check.get_cached_enabled_clouds_or_refresh = lambda *args, **kwargs: list(enabled)
    import_s = time.perf_counter() - t0

    with open(sys.argv[1]) as handle:
        case = json.load(handle)
    times, cpus = [], []
    picks: list[dict] = []
    for _ in range(case.get("repeat", 2)):
        dag, tasks = build(case)
        start, cpu = time.perf_counter(), cpu_seconds()
        sky.Optimizer.optimize(dag, minimize=sky.OptimizeTarget.COST, quiet=True)
        times.append(time.perf_counter() - start)
        cpus.append(cpu_seconds() - cpu)
        picks = [chosen(t) for t in tasks]
    print(
        json.dumps(
            {
                "version": sky.__version__,
                "import_s": import_s,
                "optimize_s": times,
                "optimize_cpu_s": cpus,
                "tasks": picks,
            }
        )
    )


if __name__ == "__main__":
    main()
