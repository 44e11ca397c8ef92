"""Pipelines: header documents, serial chains, parallel tasks, depends_on DAGs."""

from __future__ import annotations

from skyform.spec import load_task_text
from skyform.spec.inputs import TaskInputs


def load(text: str):
    return load_task_text(text, path_label="p.yaml", inputs=TaskInputs(environ={}))


def test_single_document_is_one_task_named_like_the_dag():
    dag = load("name: solo\nrun: echo\n")
    assert (dag.name, len(dag.tasks), dag.edges) == ("solo", 1, [])
    assert dag.is_chain() and dag.topological_order() == [0]


def test_lone_name_document_is_a_task_not_a_header():
    dag = load("name: just-a-name\n")
    assert [t.name for t in dag.tasks] == ["just-a-name"]


def test_serial_header_chains_tasks_in_file_order():
    dag = load(
        "name: p\n---\nname: a\nrun: echo\n---\nname: b\nrun: echo\n---\nname: c\nrun: echo\n"
    )
    assert dag.name == "p" and dag.execution == "serial"
    assert [t.name for t in dag.tasks] == ["a", "b", "c"]
    assert dag.edges == [(0, 1), (1, 2)]
    assert dag.is_chain()
    assert dag.parents(2) == [1] and dag.parents(0) == []


def test_documents_without_header_also_chain():
    dag = load("name: a\nrun: echo\n---\nname: b\nrun: echo\n")
    assert dag.name is None
    assert dag.edges == [(0, 1)]


def test_parallel_has_no_edges():
    dag = load("name: p\nexecution: PARALLEL\n---\nname: a\nrun: echo\n---\nname: b\nrun: echo\n")
    assert dag.execution == "parallel"
    assert dag.edges == []
    assert not dag.is_chain()
    assert dag.topological_order() == [0, 1]


DIAMOND = """\
name: diamond
---
name: report
skyform: {depends_on: [train-a, train-b]}
run: echo
---
name: train-b
skyform: {depends_on: fetch}
run: echo
---
name: fetch
run: echo
---
name: train-a
skyform: {depends_on: [fetch]}
run: echo
"""


def test_depends_on_builds_a_general_dag():
    dag = load(DIAMOND)
    names = [t.name for t in dag.tasks]
    edges = {(names[u], names[v]) for u, v in dag.edges}
    assert edges == {
        ("fetch", "train-a"),
        ("fetch", "train-b"),
        ("train-a", "report"),
        ("train-b", "report"),
    }
    order = [names[i] for i in dag.topological_order()]
    assert order[0] == "fetch" and order[-1] == "report"
    assert sorted(names[i] for i in dag.parents(names.index("report"))) == ["train-a", "train-b"]
    assert not dag.is_chain()


def test_depends_on_chain_is_a_chain():
    dag = load("name: b\nskyform: {depends_on: [a]}\nrun: echo\n---\nname: a\nrun: echo\n")
    assert dag.edges == [(1, 0)]
    assert dag.is_chain()
    assert dag.topological_order() == [1, 0]


def test_serial_chain_example_file_dag_from_examples():
    from pathlib import Path

    from skyform.spec import load_task

    root = Path(__file__).resolve().parents[2] / "examples"
    pipeline = load_task(root / "pipeline.yaml")
    assert [t.name for t in pipeline.tasks] == ["preprocess", "train", "eval"]
    assert pipeline.is_chain()
    dag = load_task(root / "dag.yaml")
    assert len(dag.edges) == 4 and not dag.is_chain()


def test_source_lines_point_at_each_document():
    dag = load("name: p\n---\nname: a\nrun: echo\n---\nname: b\nresources:\n  cpus: 2\nrun: echo\n")
    assert [t.source.line for t in dag.tasks] == [3, 6]
    assert dag.tasks[1].source.resources_line == 7
    assert dag.tasks[0].source.resources_line is None
