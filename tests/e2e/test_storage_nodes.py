"""Buckets on real nodes (the local infra and real sshd nodes) against a real S3 API (moto on
loopback), through the CLI as a user runs it: COPY, MOUNT, MOUNT_CACHED, uploads, deletion."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from e2ekit import task_file
from motoserver import can_fuse, keys_of, make_bucket

pytestmark = pytest.mark.e2e
needs_fuse = pytest.mark.skipif(can_fuse() is not None, reason=f"FUSE cannot mount: {can_fuse()}")
BIG = 100 * 1000 * 1000


def _lines(output: str) -> list[str]:
    return [line.split(") ", 1)[1] for line in output.splitlines() if "node=0) " in line]


def test_copy_of_a_prefix_with_a_thousand_files_and_a_big_one(sky, s3, tmp_path):
    make_bucket(s3, "datasets", "us-west-2")
    for i in range(1000):
        s3.put_object(Bucket="datasets", Key=f"train/small/{i:04d}.txt", Body=f"file {i}\n")
    s3.put_object(Bucket="datasets", Key="train/big.bin", Body=os.urandom(1000) * (BIG // 1000))
    s3.put_object(Bucket="datasets", Key="other/not-copied.txt", Body=b"no")
    task = task_file(
        tmp_path,
        "copy.yaml",
        "name: copy\nresources: {infra: local}\nfile_mounts:\n  ~/data: s3://datasets/train\n"
        "run: |\n  find ~/data -type f | wc -l\n  stat -c %s ~/data/big.bin\n"
        "  cat ~/data/small/0999.txt\n  ls ~/data\n",
    )
    plan = sky("plan", task, "-o", "plan.json", check=0)
    assert 'bucket "datasets" (s3, us-west-2, exists' in plan.stdout
    applied = sky("apply", "plan.json", timeout=600, check=0)
    assert _lines(applied.stdout)[:5] == ["1001", str(BIG), "file 999", "big.bin", "small"]
    sky("down", "-y", "copy", check=0)
    assert "datasets" in [b["Name"] for b in s3.list_buckets()["Buckets"]]  # not skyform's


@needs_fuse
def test_mount_reads_and_writes_and_cached_writes_are_in_the_bucket_when_the_job_ends(
    sky, s3, tmp_path, skyform_home
):
    make_bucket(s3, "shared-data")
    s3.put_object(Bucket="shared-data", Key="team-a/in.txt", Body=b"from the bucket\n")
    task = task_file(
        tmp_path,
        "mount.yaml",
        "name: mnt\nresources: {infra: local}\nfile_mounts:\n"
        "  ~/in:\n    source: s3://shared-data/team-a\n    mode: MOUNT\n"
        "  ~/ckpt:\n    name: ckpt-cached\n    mode: MOUNT_CACHED\n    persistent: false\n"
        "    type: MODEL_CHECKPOINT_RW\n"  # its --vfs-read-chunk-streams needs rclone 1.68+
        "run: |\n  cat ~/in/in.txt\n  echo written > ~/in/out.txt\n"
        "  head -c 3000000 /dev/urandom > ~/ckpt/model.bin\n  echo done\n",
    )
    applied = sky("apply", task, "-y", timeout=300, check=0)
    assert _lines(applied.stdout)[:2] == ["from the bucket", "done"]
    assert keys_of(s3, "shared-data") == ["team-a/in.txt", "team-a/out.txt"]  # sub-path mount
    # the job was only marked finished once the cached upload was in the bucket
    assert keys_of(s3, "ckpt-cached") == ["model.bin"]
    head = s3.head_object(Bucket="ckpt-cached", Key="model.bin")
    assert head["ContentLength"] == 3_000_000
    down = sky("down", "-y", "mnt", check=0)
    assert "bucket s3://ckpt-cached deleted" in down.stdout
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert "ckpt-cached" not in names and "shared-data" in names  # only skyform's own
    assert keys_of(s3, "shared-data") == ["team-a/in.txt", "team-a/out.txt"]  # unmounted first
    assert str(skyform_home) not in Path("/proc/mounts").read_text()  # nothing left mounted


def test_local_dir_uploaded_into_a_new_bucket_honours_ignores(sky, s3, tmp_path):
    src = tmp_path / "dataset"
    (src / "sub").mkdir(parents=True)
    (src / ".git").mkdir()
    (src / "keep.txt").write_text("keep")
    (src / "sub" / "nested.txt").write_text("nested")
    (src / "skip.log").write_text("skip")
    (src / ".git" / "HEAD").write_text("ref")
    (src / ".gitignore").write_text("*.log\n")
    task = task_file(
        tmp_path,
        "up.yaml",
        "name: up\nresources: {infra: local}\nfile_mounts:\n"
        "  ~/d:\n    name: uploaded-ds\n    source: ./dataset\n    mode: COPY\n"
        'run: find ~/d -type f | sort | sed "s|$HOME/d/||"\n',
    )
    plan = sky("plan", task, "-o", "plan.json", check=0)
    uploads = f"uploads {tmp_path / 'dataset'}"  # absolute: from where plan ran, as SkyPilot
    assert f'+ bucket "uploaded-ds" (s3, us-east-1, persistent): {uploads}' in plan.stdout
    applied = sky("apply", "plan.json", timeout=300, check=0)
    assert keys_of(s3, "uploaded-ds") == [".gitignore", "keep.txt", "sub/nested.txt"]
    assert _lines(applied.stdout)[:3] == [".gitignore", "keep.txt", "sub/nested.txt"]
    (src / ".skyignore").write_text("sub\n")  # .skyignore replaces .gitignore's rules
    (src / "sub" / "later.txt").write_text("not sent")
    sky("launch", task, "-y", timeout=300, check=0)  # as `sky launch`: uploads again
    # *.log now sent, sub/ not; nothing deleted from the bucket (aws s3 sync without --delete)
    assert keys_of(s3, "uploaded-ds") == [
        ".gitignore",
        ".skyignore",
        "keep.txt",
        "skip.log",
        "sub/nested.txt",
    ]
    again = sky("exec", "up", task, timeout=300, check=0)  # exec of the task file: COPY again
    assert "skip.log" in _lines(again.stdout)
    sky("down", "-y", "up", check=0)
    assert keys_of(s3, "uploaded-ds")  # persistent (the default): kept at down


def test_changed_source_is_a_re_upload_and_an_older_plan_is_stale(sky, s3, tmp_path):
    src = tmp_path / "dataset"
    src.mkdir()
    (src / "a.txt").write_text("one\n")
    task = task_file(
        tmp_path,
        "re.yaml",
        "name: re\nresources: {infra: local}\nfile_mounts:\n"
        "  ~/d:\n    name: reup-ds\n    source: ./dataset\n    mode: COPY\n"
        "run: cat ~/d/a.txt\n",
    )
    sky("plan", task, "-o", "first.json", check=0)
    (src / "a.txt").write_text("two\n")  # after the review, before apply
    stale = sky("apply", "first.json", timeout=300, check=3)
    changed = f"{tmp_path / 'dataset'} (uploaded into s3://reup-ds) changed since the plan was made"
    assert changed in stale.stderr
    assert "reup-ds" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]  # nothing made

    sky("apply", task, "-y", timeout=300, check=0)
    same = sky("plan", task, "--detailed-exitcode", check=0)
    assert '  bucket "reup-ds" (s3, us-east-1, exists, created by skyform' in same.stdout
    assert "~ bucket" not in same.stdout and "No changes." in same.stdout

    (src / "a.txt").write_text("three\n")
    changed = sky("plan", task, "-o", "after.json", "--detailed-exitcode", check=2)
    assert '~ bucket "reup-ds" (s3, us-east-1, exists, created by skyform' in changed.stdout
    assert "re-upload: the sources changed since skyform last uploaded them" in changed.stdout
    assert "Plan: 0 to add, 1 to change, 0 to destroy." in changed.stdout
    sky("apply", "after.json", timeout=300, check=0)
    assert s3.get_object(Bucket="reup-ds", Key="a.txt")["Body"].read() == b"three\n"
    again = sky("plan", task, "--detailed-exitcode", check=0)
    assert "~ bucket" not in again.stdout
    sky("down", "-y", "re", check=0)


def test_ssh_nodes_copy_a_bucket_with_keys_from_config(
    sky, s3, pool, tmp_path, skyform_home, monkeypatch
):
    make_bucket(s3, "lab-data")
    s3.put_object(Bucket="lab-data", Key="x/a.txt", Body=b"on the node\n")
    config = skyform_home / "config.yaml"
    config.write_text(
        config.read_text()
        + f"storage:\n  endpoint: {os.environ['AWS_ENDPOINT_URL']}\n"
        + f"  access_key_id: {os.environ['AWS_ACCESS_KEY_ID']}\n"
        + f"  secret_access_key: {os.environ['AWS_SECRET_ACCESS_KEY']}\n"
    )
    task = task_file(
        tmp_path,
        "ssh.yaml",
        "name: lab\nnum_nodes: 2\nresources: {infra: ssh/lab}\nfile_mounts:\n"
        "  ~/data: s3://lab-data/x\nrun: cat ~/data/a.txt\n",
    )
    secret = os.environ["AWS_SECRET_ACCESS_KEY"]
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)  # only config.yaml `storage:` says where and with which keys
    applied = sky("apply", task, "-y", timeout=300)
    assert applied.exit_code == 0, applied.output
    assert applied.stdout.count("on the node") == 2
    assert secret not in applied.output
    assert secret not in sky("status", "--json", check=0).stdout
    sky("down", "-y", "lab", check=0)


def test_ssh_nodes_mount_read_write_and_cached_writes_are_in_the_bucket_when_the_job_ends(
    sky, s3, pool, tmp_path
):
    from sshnodes import enable_user_fuse

    why = can_fuse() or enable_user_fuse()  # the node users are not root
    if why:
        pytest.skip(f"FUSE cannot mount on the nodes: {why}")
    make_bucket(s3, "lab-shared")
    s3.put_object(Bucket="lab-shared", Key="team-a/in.txt", Body=b"from the bucket\n")
    task = task_file(
        tmp_path,
        "mnt.yaml",
        "name: labmnt\nnum_nodes: 2\nresources: {infra: ssh/lab}\nfile_mounts:\n"
        "  ~/in:\n    source: s3://lab-shared/team-a\n    mode: MOUNT\n"
        "  ~/ckpt:\n    name: lab-ckpt\n    mode: MOUNT_CACHED\n    persistent: false\n"
        "run: |\n  cat ~/in/in.txt\n  echo written > ~/in/out-$SKYPILOT_NODE_RANK.txt\n"
        "  head -c 3000000 /dev/urandom > ~/ckpt/model-$SKYPILOT_NODE_RANK.bin\n",
    )
    applied = sky("apply", task, "-y", timeout=300)
    assert applied.exit_code == 0, applied.output
    assert applied.stdout.count("from the bucket") == 2
    assert keys_of(s3, "lab-shared") == [
        "team-a/in.txt",
        "team-a/out-0.txt",
        "team-a/out-1.txt",
    ]
    # both nodes' cached writes were in the bucket when the job was marked finished
    assert keys_of(s3, "lab-ckpt") == ["model-0.bin", "model-1.bin"]
    assert s3.head_object(Bucket="lab-ckpt", Key="model-1.bin")["ContentLength"] == 3_000_000
    down = sky("down", "-y", "labmnt", check=0)
    assert "bucket s3://lab-ckpt deleted" in down.stdout
