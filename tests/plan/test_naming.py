"""Cluster names: what names become, and that different names stay different clusters."""

from __future__ import annotations

import pytest

from skyform.errors import PlanError
from skyform.plan.naming import (
    MAX_CLUSTER_NAME,
    cluster_names,
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


def test_a_typed_cluster_name_must_already_be_one():
    assert require_cluster_name("train-v2") == "train-v2"
    with pytest.raises(PlanError) as err:
        require_cluster_name("train_v2")
    assert "would become 'train-v2'" in err.value.message
    assert err.value.hint == "Pass --cluster/-c train-v2"


def test_derived_names_say_what_they_were_made_from():
    [one] = cluster_names(["train_v2"], None, "t.yaml", None)
    assert (one.name, one.made_from) == ("train-v2", 'the task name "train_v2"')
    [kept] = cluster_names(["train"], None, "t.yaml", None)
    assert kept.made_from is None
    pipeline = cluster_names(["a_b", "a-b", None], "p", "p.yaml", None)
    assert [n.name for n in pipeline] == ["p-a-b", "p-a-b-2", "p-3"]
    assert pipeline[1].made_from is not None
