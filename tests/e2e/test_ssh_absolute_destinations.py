"""Absolute file-mount destinations (`/data`, SkyPilot's most common form) on ssh pools, on
real sshd nodes whose users are not root: made with passwordless sudo where the node user
has it; refused by `plan` (and by `apply`, before anything is reserved or created) where it
has not, with the reason."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest
from e2ekit import task_file, write_pool
from motoserver import can_fuse, keys_of, make_bucket

pytestmark = pytest.mark.e2e
SUDOERS = Path("/etc/sudoers.d")


@pytest.fixture
def sudo_for(ssh_nodes):
    """`sudo_for(i)`: node i's user may sudo without a password (a sudoers.d drop-in, removed
    after the test); returns a function that takes it away again."""
    if not shutil.which("sudo") or not SUDOERS.is_dir():
        pytest.skip("sudo is not installed: apt-get install sudo")
    made: list[Path] = []

    def grant(i: int):
        user = ssh_nodes.nodes[i].user
        drop_in = SUDOERS / f"skyform-test-{user}"
        drop_in.write_text(f"{user} ALL=(ALL) NOPASSWD: ALL\n")
        os.chmod(drop_in, 0o440)
        made.append(drop_in)
        return lambda: drop_in.unlink(missing_ok=True)

    yield grant
    for drop_in in made:
        drop_in.unlink(missing_ok=True)


@pytest.fixture
def root_dir():
    """An absolute folder only root can make (its parent is root's), removed afterwards."""
    path = Path("/srv") / f"skyform-e2e-{uuid.uuid4().hex[:8]}"
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _task(tmp_path: Path, root: Path, name: str) -> Path:
    (tmp_path / "conf").mkdir(exist_ok=True)
    (tmp_path / "conf" / "app.ini").write_text("[app]\n")
    return task_file(
        tmp_path,
        f"{name}.yaml",
        f"name: {name}\nresources: {{infra: ssh/lab}}\nfile_mounts:\n"
        f"  {root}/conf: ./conf\n"
        f"  {root}/in: s3://{name}-in\n"
        f"  {root}/data:\n    name: {name}-out\n    mode: MOUNT\n"
        f"run: |\n  cat {root}/conf/app.ini {root}/in/a.txt\n"
        f"  echo written > {root}/data/out.txt\n  stat -c %U {root}/data {root}/in\n",
    )


def test_absolute_destinations_are_made_with_passwordless_sudo(
    sky, s3, ssh_nodes, skyform_home, tmp_path, sudo_for, root_dir
):
    from sshnodes import enable_user_fuse

    why = can_fuse() or enable_user_fuse()
    if why:
        pytest.skip(f"FUSE cannot mount on the nodes: {why}")
    for i in range(ssh_nodes.count):
        ssh_nodes.reset_home(i)
    write_pool(skyform_home, ssh_nodes, [0])
    sudo_for(0)
    make_bucket(s3, "absok-in")
    s3.put_object(Bucket="absok-in", Key="a.txt", Body=b"from the bucket\n")
    task = _task(tmp_path, root_dir, "absok")
    applied = sky("apply", task, "-y", timeout=300, check=0)
    user = ssh_nodes.nodes[0].user
    lines = [line.split(") ", 1)[1] for line in applied.stdout.splitlines() if "node=0) " in line]
    assert lines[:4] == ["[app]", "from the bucket", user, user]  # made, and the user's
    assert keys_of(s3, "absok-out") == ["out.txt"]  # the MOUNT at /srv/.../data works
    sky("down", "-y", "absok", timeout=300, check=0)


def test_without_passwordless_sudo_plan_and_apply_refuse_before_anything_is_made(
    sky, s3, ssh_nodes, skyform_home, tmp_path, sudo_for, root_dir
):
    write_pool(skyform_home, ssh_nodes, [1])
    take_back = sudo_for(1)
    make_bucket(s3, "absno-in")
    task = _task(tmp_path, root_dir, "absno")
    saved = sky("plan", task, "-o", "absno.json", check=0)  # sudo allowed when planned
    take_back()
    for args in (["plan", task], ["apply", task, "-y"], ["apply", "absno.json", "-y"]):
        refused = sky(*args, timeout=120)
        assert refused.exit_code == 1, refused.output
        assert f"{root_dir}/data needs root to be made (/srv is not" in refused.stderr
        assert "may not sudo without a password" in refused.stderr
        assert "NOPASSWD" in refused.stderr and "~/data" in refused.stderr
        assert "Traceback" not in refused.output
    assert "absno.yaml:1" in sky("plan", task).stderr  # where in the task file
    # nothing was made: no host reserved, no cluster, no bucket, no folder
    assert json.loads(sky("status", "--json", check=0).stdout) == []
    assert "absno-out" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert not root_dir.exists()
    assert "Saved the plan" in saved.stdout
