"""Workdir sync and file mounts onto real sshd nodes and local nodes."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from execkit import job_spec

from skyform.errors import ExecError
from skyform.exec.connect import open_runner
from skyform.exec.hostkeys import KnownHosts
from skyform.exec.node_jobs import NodeFacts
from skyform.exec.run import open_cluster
from skyform.exec.sync import exact_times, ssh_command
from skyform.plan.model import PlannedMount
from skyform.state.models import JobStatus, NodeKind


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _node_dir(cluster, session, rank: int, rel: str) -> Path:
    """Where `~/rel` of a node is on this machine (ssh nodes' homes are local too)."""
    node = cluster.nodes[rank]
    if node.kind is NodeKind.LOCAL:
        return Path(node.root) / rel
    home = session.runners[rank].run("cd ~ && pwd -P").stdout.strip()
    return Path(home) / rel


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src/pkg").mkdir(parents=True)
    (root / "src/pkg/model.py").write_text("print('model')\n")
    (root / "train.sh").write_text("#!/bin/sh\necho training\n")
    os.chmod(root / "train.sh", 0o755)
    (root / "data").mkdir()
    (root / "data/big.bin").write_bytes(b"\0" * 1000)
    (root / "notes.log").write_text("log\n")
    (root / "src/pkg/cache.tmp").write_text("tmp\n")
    (root / ".gitignore").write_text("data/\n*.log\n")
    (root / "src/.gitignore").write_text("*.tmp\n")
    (root / ".git/info").mkdir(parents=True)
    (root / ".git/info/exclude").write_text("secrets.env\n")
    (root / "secrets.env").write_text("KEY=1\n")
    return root


EXPECTED = {
    ".gitignore",
    "src/.gitignore",
    "src/pkg/model.py",
    "train.sh",
    ".git/info/exclude",
}


def test_workdir_lands_in_skyform_workdir_with_gitignore_honoured(cluster, workdir):
    spec = job_spec(run="./train.sh > out.txt; ls -a", workdir=str(workdir))
    with open_cluster(cluster) as session:
        results = session.sync_workdir(workdir)
        assert {r.files_sent for r in results.values()} == {len(EXPECTED)}
        for rank in session.runners:
            synced = _node_dir(cluster, session, rank, "skyform_workdir")
            assert set(_tree(synced)) == EXPECTED
            assert os.stat(synced / "train.sh").st_mode & 0o111
        session.submit(spec, job_key="wd", task_id="t")
        assert session.wait("wd", timeout=30).status is JobStatus.SUCCEEDED
        # a re-sync sends only what changed and keeps what the job wrote (no --delete)
        (workdir / "src/pkg/model.py").write_text("print('v2')\n")
        again = session.sync_workdir(workdir)
        assert {r.files_sent for r in again.values()} == {1}
        for rank in session.runners:
            synced = _node_dir(cluster, session, rank, "skyform_workdir")
            assert (synced / "out.txt").read_text() == "training\n"
            assert (synced / "src/pkg/model.py").read_text() == "print('v2')\n"


def _rewrite_within_one_second(session, cluster, root: Path) -> set[int | None]:
    """main.py synced, then rewritten at the same size half a second later in the same
    second (as a quick edit after an apply does), then synced again: files sent per node."""
    main = root / "main.py"
    second = (int(time.time()) - 60) * 10**9
    main.write_text("print('v1')\n")
    os.utime(main, ns=(second + 100_000_000, second + 100_000_000))
    session.sync_workdir(root)
    main.write_text("print('v2')\n")
    os.utime(main, ns=(second + 600_000_000, second + 600_000_000))
    again = session.sync_workdir(root)
    for rank in session.runners:
        synced = _node_dir(cluster, session, rank, "skyform_workdir/main.py")
        assert synced.read_text() == "print('v2')\n", rank
    return {r.files_sent for r in again.values()}


def test_a_file_rewritten_at_its_size_within_the_second_is_sent_again(cluster, tmp_path):
    """rsync's quick check compared whole seconds: the nodes kept the old main.py and the
    job printed its old output (the flaky e2e test_plan_job_changes)."""
    root = tmp_path / "proj"
    root.mkdir()
    with open_cluster(cluster) as session:
        assert _rewrite_within_one_second(session, cluster, root) == {1}


def test_the_local_copy_fallback_sends_a_same_second_rewrite_too(tmp_path, monkeypatch):
    from execkit import local_nodes, make_cluster

    root = tmp_path / "proj"
    root.mkdir()
    cluster = make_cluster(local_nodes(tmp_path / "nodes", 2), engine="local", gpus=0)
    with open_cluster(cluster) as session:
        monkeypatch.setenv("PATH", str(tmp_path))  # no rsync on this machine: the copy
        assert _rewrite_within_one_second(session, cluster, root) == {1}


def test_nanosecond_mtimes_only_with_rsync_3_1_3_at_both_ends():
    new, old = "rsync  version 3.2.7  protocol version 32", "rsync  version 3.1.2  protocol 31"
    assert exact_times(new) and exact_times(new, "rsync  version v3.2.3  protocol version 31")
    assert not exact_times(new, old)  # an older receiver may refuse the `-@-1` it is sent
    assert not exact_times(new, "")  # a node whose version is not known


def test_skyignore_replaces_gitignore(cluster, workdir):
    (workdir / ".skyignore").write_text("/train.sh\nsrc/pkg/\n")
    with open_cluster(cluster) as session:
        session.sync_workdir(workdir)
        synced = _tree(_node_dir(cluster, session, 0, "skyform_workdir"))
    assert "train.sh" not in synced and "src/pkg/model.py" not in synced
    assert {"data/big.bin", "notes.log", "secrets.env", ".skyignore"} <= set(synced)


def test_sftp_fallback_when_rsync_is_not_installed_here(cluster, workdir, tmp_path, monkeypatch):
    (workdir / "link").symlink_to("train.sh")
    with open_cluster(cluster) as session:
        no_rsync = tmp_path / "bin"
        no_rsync.mkdir()
        monkeypatch.setenv("PATH", str(no_rsync))  # no rsync on this machine
        first = session.sync_workdir(workdir)
        second = session.sync_workdir(workdir)
        monkeypatch.undo()
        expected_method = "copy" if cluster.nodes[0].kind is NodeKind.LOCAL else "sftp"
        assert {r.method for r in first.values()} == {expected_method}
        assert {r.files_sent for r in first.values()} == {len(EXPECTED)}
        assert {r.files_sent for r in second.values()} == {0}
        for rank in session.runners:
            synced = _node_dir(cluster, session, rank, "skyform_workdir")
            assert set(_tree(synced)) == EXPECTED
            assert os.readlink(synced / "link") == "train.sh"
            assert os.stat(synced / "train.sh").st_mode & 0o111


def test_sftp_fallback_when_the_node_has_no_rsync(fresh_ssh_nodes, workdir):
    from execkit import make_cluster

    with open_cluster(make_cluster(fresh_ssh_nodes.handles()[:2])) as session:
        session.facts = {rank: NodeFacts(rsync=False) for rank in session.facts}
        results = session.sync_workdir(workdir)
        assert {r.method for r in results.values()} == {"sftp"}
        assert set(_tree(fresh_ssh_nodes.nodes[1].home / "skyform_workdir")) == EXPECTED


def test_file_mounts_copy_files_and_directories(cluster, workdir, tmp_path):
    (tmp_path / "config.yaml").write_text("lr: 0.1\n")
    mounts = {
        "~/data": PlannedMount(source="project/src"),
        "cfg/config.yaml": PlannedMount(source=str(tmp_path / "config.yaml")),
    }
    with open_cluster(cluster) as session:
        session.sync_file_mounts(mounts, base_dir=tmp_path)
        for rank in session.runners:
            home = _node_dir(cluster, session, rank, "")
            assert (home / "data/pkg/model.py").read_text() == "print('model')\n"
            assert (home / "cfg/config.yaml").read_text() == "lr: 0.1\n"


def test_bucket_mounts_are_refused_before_anything_is_copied(cluster, tmp_path):
    (tmp_path / "a.txt").write_text("a")
    mounts = {
        "aaa": PlannedMount(source="a.txt"),
        "/ckpt": PlannedMount(source="s3://my-bucket/ckpt"),
    }
    with open_cluster(cluster) as session:
        with pytest.raises(ExecError) as err:
            session.sync_file_mounts(mounts, base_dir=tmp_path)
        assert "file mount /ckpt: s3://my-bucket/ckpt is a bucket" in err.value.message
        assert err.value.hint
        assert not (_node_dir(cluster, session, 0, "") / "aaa").exists()


def test_local_nodes_refuse_absolute_mount_destinations(tmp_path):
    from execkit import local_nodes, make_cluster

    (tmp_path / "a.txt").write_text("a")
    cluster = make_cluster(local_nodes(tmp_path / "nodes", 1), engine="local")
    refused = "file mount /etc/skyform-test: a local node"
    with open_cluster(cluster) as session, pytest.raises(ExecError, match=refused):
        session.sync_file_mounts(
            {"/etc/skyform-test": PlannedMount(source="a.txt")}, base_dir=tmp_path
        )
    assert not Path("/etc/skyform-test").exists()


def test_missing_mount_source_names_the_mount(cluster, tmp_path):
    missing = r"file mount ~/x: source .*nope does not exist"
    with open_cluster(cluster) as session, pytest.raises(ExecError, match=missing):
        session.sync_file_mounts({"~/x": PlannedMount(source="nope")}, base_dir=tmp_path)


def test_openssh_trusts_the_known_hosts_skyform_wrote(fresh_ssh_nodes):
    """rsync's ssh (StrictHostKeyChecking=yes) accepts what skyform recorded: one file format."""
    node = fresh_ssh_nodes.handle(1)
    with open_runner(node) as runner:
        cmd = ssh_command(runner, KnownHosts())
    proc = subprocess.run(
        f"{cmd} {node.user}@{node.host} echo via-openssh",
        shell=True,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert proc.stdout == "via-openssh\n", proc.stderr


def test_rsync_refuses_a_node_whose_key_changed_behind_skyform(make_ssh_nodes, workdir):
    from execkit import make_cluster

    nodes = make_ssh_nodes(1)
    with open_cluster(make_cluster(nodes.handles())) as session:
        known = KnownHosts()
        node = nodes.handle(0)
        from skyform.exec.hostkeys import HostKey

        known.remember(
            node.host, node.port, HostKey("ssh-ed25519", "AAAAC3NzaC1lZDI1NTE5AAAAI" + "A" * 43)
        )
        with pytest.raises(ExecError, match="host key"):
            session.sync_workdir(workdir)
