"""Desired vs current clusters on hand-built states: every action with its reason."""

from __future__ import annotations

from factory import A2_SPOT, G5, job, spec

from skyform.plan.diff import (
    CurrentCluster,
    destroy_changes,
    diff_cluster,
    diff_clusters,
    untouched_clusters,
)
from skyform.plan.jobdigest import with_digests
from skyform.plan.model import Action, WorkdirFiles
from skyform.plan.ownership import Owner, Relation, relation
from skyform.plan.parts import count_actions

OWNER = Owner("/work/train.yaml", "train.yaml")


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


def test_run_change_without_a_recorded_job_falls_back_to_the_digest():
    change = diff_cluster(spec(job_digest="sha256:new"), current(spec()))
    assert change.action is Action.UPDATE
    assert "the job changed" in change.reason
    assert [a.path for a in change.attributes] == ["job"]


def test_setup_change_is_update_that_reruns_setup():
    change = diff_cluster(spec(setup_digest="sha256:new"), current(spec()))
    assert change.action is Action.UPDATE
    assert change.reason == "setup changed: setup and the job will run again"


def test_run_change_shows_the_old_and_new_text_when_the_job_is_recorded():
    old, new = job(run="python train.py --lr 0.1"), job(run="python train.py --lr 0.01")
    before = CurrentCluster(spec=spec(job_digest=old.job_digest), source=OWNER.path, job=old)
    change = diff_cluster(spec(job_digest=new.job_digest), before, job=new, owner=OWNER)
    assert change.action is Action.UPDATE
    assert change.reason == "run changed: the job will run again"
    [attr] = change.attributes
    assert (attr.path, attr.before, attr.after) == ("run", old.run, new.run)


def test_an_envs_only_change_says_envs_not_setup_changed():
    old = job()
    new = with_digests(old.model_copy(update={"envs": {"EPOCHS": "4"}}))
    before = CurrentCluster(
        spec=spec(setup_digest=old.setup_digest, job_digest=old.job_digest),
        source=OWNER.path,
        job=old,
    )
    after = spec(setup_digest=new.setup_digest, job_digest=new.job_digest)
    change = diff_cluster(after, before, job=new, owner=OWNER)
    assert change.reason == "envs changed (setup sees them): setup and the job will run again"
    assert [a.path for a in change.attributes] == ["envs"]


def test_edited_workdir_files_make_the_job_run_again_and_say_how_many():
    recorded = WorkdirFiles(files={"train.py": "1" * 16, "util.py": "2" * 16})
    now = WorkdirFiles(files={"train.py": "3" * 16, "util.py": "2" * 16, "new.py": "4" * 16})
    before = CurrentCluster(spec=spec(), source=OWNER.path, job=job(), workdir_files=recorded)
    change = diff_cluster(spec(), before, job=job(), workdir_files=now, owner=OWNER)
    assert change.action is Action.UPDATE
    assert change.reason == "workdir changed (2 files): the job will run again"
    [attr] = change.attributes
    assert attr.path == "workdir_files"
    assert attr.after == "3 files (1 changed, 1 added: train.py, new.py)"
    same = diff_cluster(spec(), before, job=job(), workdir_files=recorded, owner=OWNER)
    assert same.action is Action.NOOP


def test_one_file_is_one_file():
    before = CurrentCluster(
        spec=spec(), source=OWNER.path, job=job(), workdir_files=WorkdirFiles(files={"a": "1" * 16})
    )
    now = WorkdirFiles(files={"a": "2" * 16})
    change = diff_cluster(spec(), before, job=job(), workdir_files=now, owner=OWNER)
    assert change.reason == "workdir changed (1 file): the job will run again"
    assert (change.attributes[0].before, change.attributes[0].after) == (
        "1 file",
        "1 file (1 changed: a)",
    )


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


def test_a_cluster_of_this_file_that_the_plan_does_not_name_is_left_alone_and_listed():
    state = {
        "train": current(spec()),
        "eval": current(spec("eval", offer=G5)),
        "other": current(spec("other"), source="/work/other.yaml"),
    }
    changes = diff_clusters([spec()], state, owner=OWNER)
    assert [(c.cluster, c.action) for c in changes] == [("train", Action.NOOP)]
    untouched = untouched_clusters(["train"], state, OWNER)
    assert [u.cluster for u in untouched] == ["eval"]
    assert "skyform down eval" in untouched[0].reason


def test_another_files_cluster_of_the_same_name_is_a_takeover():
    state = {"train": current(spec(), source="/work/other.yaml")}
    [change] = diff_clusters([spec(job_digest="sha256:new")], state, owner=OWNER)
    assert change.action is Action.UPDATE
    assert change.takes_over == "the task file /work/other.yaml"


def test_a_managed_jobs_cluster_is_a_takeover():
    state = {"train": CurrentCluster(spec=spec(), source=OWNER.path, managed_job=3)}
    [change] = diff_clusters([spec(offer=G5)], state, owner=OWNER)
    assert change.takes_over == "managed job 3"


def test_ownership_does_not_depend_on_how_the_path_was_spelled():
    legacy = {"train": current(spec(), source="train.yaml")}  # recorded by older versions
    [change] = diff_clusters([spec(job_digest="sha256:new")], legacy, owner=OWNER)
    assert change.takes_over is None
    assert untouched_clusters([], legacy, OWNER)[0].cluster == "train"
    elsewhere = Owner("/work/a/train.yaml", "a/train.yaml")
    assert relation("/work/a/train.yaml", None, elsewhere) is Relation.MINE
    assert relation("/work/b/train.yaml", None, elsewhere) is Relation.OTHER
    assert relation("b/train.yaml", None, elsewhere) is Relation.UNKNOWN


def test_destroy_deletes_this_files_clusters_never_another_files():
    state = {
        "train": current(spec()),
        "eval": current(spec("eval"), source=OWNER.path),
        "mine-too": current(spec("mine-too")),
        "theirs": current(spec("theirs"), source="/work/other.yaml"),
    }
    changes, untouched = destroy_changes(
        ["train", "theirs", "absent"], state, owner=OWNER, everything_owned=True
    )
    assert [(c.cluster, c.action) for c in changes] == [
        ("train", Action.DELETE),
        ("eval", Action.DELETE),
        ("mine-too", Action.DELETE),
    ]
    assert [u.cluster for u in untouched] == ["theirs"]
    only_named, _ = destroy_changes(["train"], state, owner=OWNER, everything_owned=False)
    assert [c.cluster for c in only_named] == ["train"]


def test_counts_replace_as_add_and_destroy():
    state = {"a": current(spec("a")), "b": current(spec("b")), "d": current(spec("d"))}
    desired = [spec("a", offer=G5), spec("b", job_digest="x"), spec("c")]
    changes = diff_clusters(desired, state, owner=OWNER)
    assert [c.action for c in changes] == [Action.REPLACE, Action.UPDATE, Action.CREATE]
    assert count_actions(changes) == (2, 1, 1)


def test_a_cluster_whose_setup_failed_runs_it_again_when_applied_unchanged():
    change = diff_cluster(spec(), current(spec(), status="SETUP_FAILED"))
    assert change.action is Action.UPDATE
    assert "setup did not complete" in change.reason


def _bucket_job(**modes: str):
    """The factory's job with bucket mounts `~/<name>` in the given modes."""
    from skyform.plan.jobdigest import with_digests
    from skyform.plan.model import BucketMount, PlannedMount

    mounts = {
        f"~/{name}": PlannedMount(
            source=f"s3://b-{name}",
            mode=mode,
            bucket=BucketMount(bucket=f"b-{name}", store="s3", mode=mode),
        )
        for name, mode in modes.items()
    }
    return with_digests(job().model_copy(update={"file_mounts": mounts}))


def _with_job(j):
    s = spec(setup_digest=j.setup_digest, job_digest=j.job_digest)
    return s, CurrentCluster(spec=s, status="UP", source="train.yaml", job=j)


def test_a_copy_of_a_bucket_uploaded_again_is_refreshed_on_a_cluster_that_stays():
    j = _bucket_job(data="COPY", ckpt="MOUNT")
    s, cur = _with_job(j)
    change = diff_cluster(s, cur, job=j, refresh={"~/data": "s3://b-data"})
    assert change.action is Action.UPDATE
    assert change.reason == "COPY refresh: ~/data (s3://b-data uploaded again)"
    assert change.attach_again == ["~/data"]
    assert [(a.path, a.after) for a in change.attributes] == [
        ('file_mounts["~/data"]', "COPY of s3://b-data again")
    ]
    assert count_actions([change]) == (0, 1, 0)


def test_a_mount_found_missing_is_attached_again_only_when_both_jobs_have_it():
    j = _bucket_job(data="COPY", ckpt="MOUNT_CACHED")
    s, cur = _with_job(j)
    change = diff_cluster(s, cur, job=j, detached={"~/ckpt": "MOUNT_CACHED"})
    assert change.action is Action.UPDATE
    assert change.reason == "MOUNT_CACHED ~/ckpt not attached"
    assert change.attach_again == ["~/ckpt"]
    # a mount the desired job no longer has, or had in another mode: nothing to attach
    other = _bucket_job(data="COPY", ckpt="MOUNT")
    assert (
        diff_cluster(
            s, cur, job=_bucket_job(data="COPY"), detached={"~/ckpt": "MOUNT_CACHED"}
        ).attach_again
        == []
    )
    assert "attach_again" not in diff_cluster(s, cur, job=j).model_dump(mode="json")
    moved = diff_cluster(
        spec(job_digest=other.job_digest), cur, job=other, detached={"~/ckpt": "MOUNT"}
    )
    assert moved.attach_again == [] and "file_mounts changed" in moved.reason


def test_a_new_cluster_has_nothing_to_attach_again():
    j = _bucket_job(data="COPY")
    change = diff_cluster(spec(), None, job=j, refresh={"~/data": "s3://b-data"})
    assert change.action is Action.CREATE and change.attach_again == []
