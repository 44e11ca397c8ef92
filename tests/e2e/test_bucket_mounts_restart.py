"""Bucket mounts keep their data across a stop and start, an autostop and start, and a mount
that a node lost: real sshd nodes (and the local infra), real rclone over FUSE, moto's S3.
What a job writes under a mount after any of these is read back from the bucket."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from autostopkit import set_interval, statuses
from e2ekit import task_file, wait_until
from motoserver import can_fuse, keys_of, make_bucket

pytestmark = pytest.mark.e2e

TASK = """\
name: {name}
resources: {{infra: {infra}{autostop}}}
file_mounts:
  ~/in:
    source: s3://{name}-shared
    mode: MOUNT
  ~/ckpt:
    name: {name}-ckpt
    mode: MOUNT_CACHED
run: echo one > ~/ckpt/one.txt
"""


def _fuse_for_node_users() -> None:
    from sshnodes import enable_user_fuse

    why = can_fuse() or enable_user_fuse()  # the node users are not root
    if why:
        pytest.skip(f"FUSE cannot mount on the nodes: {why}")


def _rclone_pids(under: Path) -> list[int]:
    """The rclone processes serving a mount point under `under` (found by their pid)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"rclone") and any(str(under).encode() in a for a in argv):
            pids.append(int(proc.name))
    return pids


def _kill_rclone(under: Path) -> None:
    """What a reboot or a crash does to the mounts: their rclone processes are gone."""
    pids = _rclone_pids(under)
    assert pids, f"no rclone serves a mount under {under}"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not _rclone_pids(under), timeout=10)


def _write(sky, cluster: str, name: str) -> None:
    """A job writes a checkpoint and a file under the MOUNT: both must reach the buckets."""
    sky(
        "exec",
        cluster,
        f"echo {name} > ~/ckpt/{name}.txt && echo {name} > ~/in/{name}.txt",
        timeout=300,
        check=0,
    )


def _in_buckets(s3, cluster: str, name: str) -> bool:
    return f"{name}.txt" in keys_of(s3, f"{cluster}-ckpt") and f"{name}.txt" in keys_of(
        s3, f"{cluster}-shared"
    )


def test_stop_start_and_a_lost_mount_on_ssh_nodes_keep_writes_reaching_the_buckets(
    sky, s3, pool, tmp_path
):
    _fuse_for_node_users()
    make_bucket(s3, "labmnt-shared")
    task = task_file(tmp_path, "mnt.yaml", TASK.format(name="labmnt", infra="ssh/lab", autostop=""))
    sky("apply", task, "-y", timeout=300, check=0)
    assert keys_of(s3, "labmnt-ckpt") == ["one.txt"]
    _write(sky, "labmnt", "after-the-job")  # the job ended; its mounts stay attached
    assert _in_buckets(s3, "labmnt", "after-the-job")
    homes = [n.home for n in pool.nodes]
    assert any(_rclone_pids(h) for h in homes)

    stopped = sky("stop", "-y", "labmnt", timeout=300, check=0)
    assert "2 bucket mount(s) unmounted (1 MOUNT_CACHED flushed first)" in stopped.stdout
    assert not any(_rclone_pids(h) for h in homes)  # stop ended its rclone processes
    started = sky("start", "-y", "labmnt", timeout=300, check=0)
    assert "bucket mounts attached again: ~/ckpt, ~/in" in started.stdout
    _write(sky, "labmnt", "after-start")
    assert _in_buckets(s3, "labmnt", "after-start")
    same = sky("plan", task, "--detailed-exitcode", timeout=120, check=0)
    assert "No changes." in same.stdout

    # a node lost its mounts (rclone gone, as after a reboot): the plan says so, apply
    # mounts them again, and the job's writes reach the buckets
    (home,) = [h for h in homes if _rclone_pids(h)]
    _kill_rclone(home)
    lost = sky("plan", task, "-o", "remount.json", "--detailed-exitcode", timeout=120, check=2)
    assert '~ cluster "labmnt"' in lost.stdout
    assert "MOUNT_CACHED ~/ckpt not attached; MOUNT ~/in not attached" in lost.stdout
    applied = sky("apply", "remount.json", timeout=300, check=0)
    assert "bucket mounts attached again: ~/ckpt, ~/in" in applied.stdout
    _write(sky, "labmnt", "after-remount")
    assert _in_buckets(s3, "labmnt", "after-remount")

    # and an exec that finds them gone attaches them before it runs
    _kill_rclone(home)
    _write(sky, "labmnt", "exec-remounts")
    assert _in_buckets(s3, "labmnt", "exec-remounts")
    sky("down", "-y", "labmnt", timeout=300, check=0)
    assert not any(_rclone_pids(h) for h in homes)


def test_autostop_then_start_mounts_the_buckets_again(sky, s3, pool, tmp_path, skyform_home):
    _fuse_for_node_users()
    set_interval(skyform_home, 2)
    make_bucket(s3, "idle-shared")
    task = task_file(
        tmp_path,
        "idle.yaml",
        TASK.format(name="idle", infra="ssh/lab", autostop=", autostop: {idle_minutes: 1}"),
    )
    sky("apply", task, "-y", timeout=300, check=0)
    homes = [n.home for n in pool.nodes]
    assert any(_rclone_pids(h) for h in homes)
    # the agent parks the mounts when it stops the cluster (its rclone ends on the node)
    wait_until(lambda: not any(_rclone_pids(h) for h in homes), timeout=150)
    markers = [h / ".skyform_node" / "autostop" / "state" for h in homes]
    wait_until(lambda: any(m.exists() and m.read_text().startswith("stop") for m in markers))
    # `start` at once, as a user does (no `status --refresh` first): taken as stopped, resumed
    assert statuses(sky, refresh=False)["idle"]["status"] == "UP"
    started = sky("start", "-y", "idle", timeout=300, check=0)
    assert "bucket mounts attached again: ~/ckpt, ~/in" in started.stdout
    _write(sky, "idle", "after-autostop")
    assert _in_buckets(s3, "idle", "after-autostop")
    sky("down", "-y", "idle", timeout=300, check=0)


@pytest.mark.skipif(can_fuse() is not None, reason=f"FUSE cannot mount: {can_fuse()}")
def test_a_local_cluster_that_lost_its_mounts_is_a_change_and_gets_them_back(
    sky, s3, tmp_path, skyform_home
):
    make_bucket(s3, "loc-shared")
    task = task_file(tmp_path, "loc.yaml", TASK.format(name="loc", infra="local", autostop=""))
    sky("apply", task, "-y", timeout=300, check=0)
    _kill_rclone(skyform_home)
    time.sleep(0.5)
    lost = sky("plan", task, "-o", "remount.json", "--detailed-exitcode", timeout=120, check=2)
    assert "MOUNT_CACHED ~/ckpt not attached; MOUNT ~/in not attached" in lost.stdout
    assert "Plan: 0 to add, 1 to change, 0 to destroy." in lost.stdout
    sky("apply", "remount.json", timeout=300, check=0)
    _write(sky, "loc", "back")
    assert _in_buckets(s3, "loc", "back")
    sky("down", "-y", "loc", timeout=300, check=0)
