"""YAML reading: positions for every key and value, anchors and merge keys still work."""

from __future__ import annotations

import pytest

from skyform.errors import SpecError
from skyform.spec import load_task_text
from skyform.spec.inputs import TaskInputs
from skyform.spec.yamlpos import Pos, compose_documents


def test_positions_of_keys_and_values():
    (doc,) = compose_documents("name: t\nresources:\n  any_of:\n    - cpus: 4\n", "t.yaml")
    assert doc.positions[("name",)] == Pos(1, 7, 1, 1)
    assert doc.positions[("resources", "any_of", 0, "cpus")] == Pos(4, 13, 4, 7)
    # an unknown path falls back to its closest known ancestor
    assert doc.pos(("resources", "any_of", 0, "cpus", "x")) == Pos(4, 13, 4, 7)


def test_documents_know_their_first_line():
    docs = compose_documents("name: p\n---\n# comment\nname: a\n---\n---\nname: b\n", "t.yaml")
    assert [d.line for d in docs] == [1, 4, 7]  # the empty document is dropped


def test_anchors_and_merge_keys_are_expanded():
    text = (
        "resources:\n  any_of:\n"
        "    - &base {infra: aws, cpus: 4+, use_spot: true}\n"
        "    - <<: *base\n      infra: gcp\n      use_spot: false\n"
        "run: echo\n"
    )
    aws, gcp = load_task_text(text, inputs=TaskInputs(environ={})).tasks[0].resources.groups[0]
    assert (aws.cloud, gcp.cloud) == ("aws", "gcp")
    assert aws.cpus == gcp.cpus
    assert (aws.use_spot, gcp.use_spot) == (True, False)  # explicit keys beat merged ones


def test_anchors_do_not_cross_documents():
    with pytest.raises(SpecError, match="undefined alias"):
        load_task_text(
            "name: a\nenvs: &e {A: 1}\n---\nname: b\nenvs: *e\n", inputs=TaskInputs(environ={})
        )


def test_yaml_booleans_and_numbers_like_pyyaml():
    task = load_task_text(
        "envs:\n  A: yes\n  B: 0x10\n  C: '007'\nresources:\n  use_spot: on\nrun: echo\n",
        inputs=TaskInputs(environ={}),
    ).tasks[0]
    assert task.envs == {"A": "True", "B": "16", "C": "007"}
    assert task.resources.groups[0][0].use_spot is True


def test_syntax_error_has_line_and_column():
    with pytest.raises(SpecError) as caught:
        compose_documents("run: [echo\n", "t.yaml")
    assert caught.value.path == "t.yaml"
    assert caught.value.line is not None and caught.value.column is not None
