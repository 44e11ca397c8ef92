"""The six planning cases both plan benchmarks run (task YAML generated into a directory).

Each case is a list of task documents (plain dicts) plus edges; `write_case` renders the
skyform file (a pipeline with `skyform.depends_on` for DAGs), and `skypilot_docs` gives the same
tasks without skyform's own keys for SkyPilot. No estimated hours (SkyPilot's default 1 h).
"""

from __future__ import annotations

from pathlib import Path

import yaml

GPU_SETS = ["A100:1", "L4:1", "A100:8", "H100:1", "T4:1"]


def _cpu(name: str, cpus: str = "4+", **extra) -> dict:
    return {"name": name, "resources": {"cpus": cpus}, "run": f"echo {name}", **extra}


def _gpu(name: str, gpus: str, **extra) -> dict:
    return {"name": name, "resources": {"accelerators": gpus}, "run": f"echo {name}", **extra}


def case_a100x8():
    return [_gpu("train", "A100:8")], []


def case_cpus4():
    return [_cpu("work")], []


def case_chain3():
    tasks = [
        _cpu("preprocess", "8+", outputs={"s3://bench-data/tokens": 20}),
        _gpu("train", "A100:1", outputs={"gs://bench-data/ckpt": 5}),
        _cpu("eval"),
    ]
    return tasks, [(0, 1), (1, 2)]


def case_dag5():
    tasks = [
        _cpu("fetch", outputs={"s3://bench-data/raw": 10}),
        _gpu("train-a", "A100:1", outputs={"s3://bench-data/a": 2}),
        _gpu("train-b", "L4:1", outputs={"s3://bench-data/b": 2}),
        _gpu("train-c", "T4:1", outputs={"s3://bench-data/c": 2}),
        _cpu("report"),
    ]
    return tasks, [(0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (3, 4)]


def case_chain50():
    tasks = []
    for i in range(50):
        out = {"outputs": {f"s3://bench-data/step{i}": 1 + i % 5}}
        if i % 5 == 4:
            tasks.append(_gpu(f"step{i}", GPU_SETS[(i // 5) % len(GPU_SETS)], **out))
        else:
            tasks.append(_cpu(f"step{i}", ("4+", "8+", "2+", "16+")[i % 4], **out))
    return tasks, [(i, i + 1) for i in range(49)]


def case_dag20():
    """Four layers of five; each task reads from two tasks of the layer before."""
    tasks, edges = [], []
    for layer in range(4):
        for j in range(5):
            i = layer * 5 + j
            out = {"outputs": {f"s3://bench-data/t{i}": 1 + (i % 3)}}
            if (i % 4) == 1:
                tasks.append(_gpu(f"t{i}", GPU_SETS[i % len(GPU_SETS)], **out))
            else:
                tasks.append(_cpu(f"t{i}", ("4+", "8+", "2+")[i % 3], **out))
            if layer:
                edges += [((layer - 1) * 5 + j, i), ((layer - 1) * 5 + (j + 1) % 5, i)]
    return tasks, sorted(edges)


CASES = {
    "a100x8": case_a100x8,
    "cpus4": case_cpus4,
    "chain3": case_chain3,
    "dag5": case_dag5,
    "chain50": case_chain50,
    "dag20": case_dag20,
}


def is_chain(n: int, edges: list[tuple[int, int]]) -> bool:
    return edges == [(i, i + 1) for i in range(n - 1)]


def write_case(name: str, directory: Path) -> Path:
    tasks, edges = CASES[name]()
    docs = [dict(t) for t in tasks]
    if len(docs) > 1 and not is_chain(len(docs), edges):
        for v, doc in enumerate(docs):
            parents = [tasks[u]["name"] for u, w in edges if w == v]
            if parents:
                doc["skyform"] = {"depends_on": parents}
    if len(docs) > 1:
        docs.insert(0, {"name": name, "execution": "serial"})
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def skypilot_docs(name: str) -> tuple[list[dict], list[tuple[int, int]]]:
    return CASES[name]()
