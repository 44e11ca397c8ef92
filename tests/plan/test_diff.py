"""Desired vs current clusters on hand-built states: every action with its reason."""

from __future__ import annotations

from factory import A2_SPOT, G5, spec

from skyform.plan.diff import CurrentCluster, count_actions, diff_cluster, diff_clusters
from skyform.plan.model import Action


def current(s, status="UP", source="train.yaml"):
    return CurrentCluster(spec=s, status=status, source=source)


def test_new_cluster_is_created():
    change = diff_cluster(spec(), None)
    assert change.action is Action.CREATE
    assert change.reason == "new cluster"
    assert change.before is None and change.after == spec()


def test_identical_cluster_is_noop():
    change = diff_cluster(spec(), current(spec()))
    assert change.action is Action.NOOP
    assert change.attributes == []


def test_instance_change_forces_replacement_and_says_which_attribute():
    change = diff_cluster(spec(offer=A2_SPOT), current(spec()))
    assert change.action is Action.REPLACE
    assert change.reason.startswith("infra aws/us-east-1/use1-az1 → gcp/us-central1/")
    assert change.reason.endswith("forces replacement")
    paths = {a.path for a in change.attributes if a.forces_replacement}
    assert {"infra", "instance_type"} <= paths


def test_node_count_change_forces_replacement():
    change = diff_cluster(spec(nodes=4), current(spec(nodes=2)))
    assert change.action is Action.REPLACE
    assert change.reason == "num_nodes 2 → 4 forces replacement"


def test_run_change_is_update_in_place():
    change = diff_cluster(spec(job_digest="sha256:new"), current(spec()))
    assert change.action is Action.UPDATE
    assert "the job changed" in change.reason
    assert [a.path for a in change.attributes] == ["job"]


def test_setup_change_is_update_that_reruns_setup():
    change = diff_cluster(spec(setup_digest="sha256:new"), current(spec()))
    assert change.action is Action.UPDATE
    assert change.reason == "setup changed: setup and the job will run again"


def test_ports_change_is_update_not_replace():
    change = diff_cluster(spec(ports=["8080"]), current(spec()))
    assert change.action is Action.UPDATE
    assert change.reason == "ports changed"
    assert not any(a.forces_replacement for a in change.attributes)


def test_unfinished_apply_is_carried_on_not_rebuilt():
    change = diff_cluster(spec(), current(spec(), status="INIT"))
    assert change.action is Action.UPDATE
    assert "did not finish" in change.reason and "keeping the nodes" in change.reason


def test_unfinished_apply_whose_task_moved_elsewhere_is_replaced():
    change = diff_cluster(spec(offer=G5), current(spec(), status="INIT"))
    assert change.action is Action.REPLACE
    assert "forces replacement" in change.reason


def test_lost_cluster_is_rebuilt():
    change = diff_cluster(spec(), current(spec(), status="LOST"))
    assert change.action is Action.REPLACE
    assert "nodes were lost" in change.reason


def test_removed_task_of_same_source_is_deleted_but_others_are_left_alone():
    state = {
        "train": current(spec()),
        "eval": current(spec("eval", offer=G5)),
        "other": current(spec("other"), source="other.yaml"),
    }
    changes = diff_clusters([spec()], state, source="train.yaml")
    assert [(c.cluster, c.action) for c in changes] == [
        ("train", Action.NOOP),
        ("eval", Action.DELETE),
    ]
    assert changes[1].reason == "no longer in train.yaml"


def test_destroy_deletes_only_existing_clusters():
    state = {"train": current(spec())}
    changes = diff_clusters([spec(), spec("eval")], state, source="train.yaml", destroy=True)
    assert [(c.cluster, c.action) for c in changes] == [("train", Action.DELETE)]


def test_counts_replace_as_add_and_destroy():
    state = {"a": current(spec("a")), "b": current(spec("b")), "d": current(spec("d"))}
    desired = [spec("a", offer=G5), spec("b", job_digest="x"), spec("c")]
    changes = diff_clusters(desired, state, source="train.yaml")
    assert [c.action for c in changes] == [
        Action.REPLACE,
        Action.UPDATE,
        Action.CREATE,
        Action.DELETE,
    ]
    assert count_actions(changes) == (2, 1, 2)


def test_a_cluster_whose_setup_failed_runs_it_again_when_applied_unchanged():
    change = diff_cluster(spec(), current(spec(), status="SETUP_FAILED"))
    assert change.action is Action.UPDATE
    assert "setup did not complete" in change.reason
