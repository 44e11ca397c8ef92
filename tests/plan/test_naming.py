"""Cluster names: what names become, and that different names stay different clusters."""

from __future__ import annotations

import pytest

from skyform.errors import PlanError
from skyform.plan.naming import (
    MAX_CLUSTER_NAME,
    cluster_names,
    engine_name,
    is_cluster_name,
    require_cluster_name,
    sanitize_name,
)


def test_valid_names_are_kept_and_sanitising_is_idempotent():
    for name in ("train", "train-v2", "a1", "sky"):
        assert sanitize_name(name) == name
    for text in ("Train_V2", "a b", "名前", "..", "x" * 80, "9lives"):
        once = sanitize_name(text)
        assert is_cluster_name(once) and len(once) <= MAX_CLUSTER_NAME


def test_names_that_lose_everything_or_are_cut_stay_distinct():
    assert sanitize_name("名前") != sanitize_name("..") != sanitize_name("???")
    long_a, long_b = "experiment-" + "a" * 40 + "-one", "experiment-" + "a" * 40 + "-two"
    assert sanitize_name(long_a) != sanitize_name(long_b)
    assert sanitize_name(long_a).startswith("experiment-aaaa")


def test_a_typed_cluster_name_is_any_name_skypilot_takes():
    assert require_cluster_name("train-v2") == "train-v2"
    # SkyPilot's regex: a letter, then letters, digits, `-`, `_`, `.`, not ending in `-_.`
    assert require_cluster_name("my_cluster") == "my-cluster"
    assert require_cluster_name("Cuda_11.8") == "cuda-11-8"
    for refused in ("9lives", "bad_", "-x", "a b", "x" * 41, "名前"):
        with pytest.raises(PlanError) as err:
            require_cluster_name(refused)
        assert "is not a valid cluster name" in err.value.message
    assert err.value.hint.startswith("Pass --cluster/-c ")
    [typed] = cluster_names(["train"], None, "t.yaml", "Cuda_11.8")
    assert (typed.name, typed.shown, typed.made_from) == (
        "cuda-11-8",
        "Cuda_11.8",
        '--cluster "Cuda_11.8"',
    )
    [plain] = cluster_names(["train"], None, "t.yaml", "dev")
    assert (plain.name, plain.shown) == ("dev", None)  # nothing to show apart
    [from_task] = cluster_names(["train_v2"], None, "t.yaml", None)
    assert from_task.shown is None  # a task's name is not a cluster name typed by a user
    assert [n.shown for n in cluster_names(["a", "b"], None, "p.yaml", "My_Pipe")] == [
        "My_Pipe-a",
        "My_Pipe-b",
    ]
    assert engine_name("Cuda_11.8") == "cuda-11-8" and engine_name("a b") == "a b"


def test_derived_names_say_what_they_were_made_from():
    [one] = cluster_names(["train_v2"], None, "t.yaml", None)
    assert (one.name, one.made_from) == ("train-v2", 'the task name "train_v2"')
    [kept] = cluster_names(["train"], None, "t.yaml", None)
    assert kept.made_from is None
    pipeline = cluster_names(["a_b", "a-b", None], "p", "p.yaml", None)
    assert [n.name for n in pipeline] == ["p-a-b", "p-a-b-2", "p-3"]
    assert pipeline[1].made_from is not None
