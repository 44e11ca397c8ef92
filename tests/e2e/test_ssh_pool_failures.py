"""Bad things on real sshd nodes, driven through the CLI: unreachable hosts, wrong keys, changed
host keys, a node killed mid-run, a full disk, `kill -9` of apply, two applies at once."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2ekit import task_file, write_pool
from helpers import wait_until

pytestmark = pytest.mark.e2e

SLEEPY = """\
name: {name}
num_nodes: {nodes}
resources: {{infra: ssh/lab}}
setup: {setup}
run: {run}
"""


def sleepy(tmp_path, name="job", nodes=1, setup="echo ready", run="echo done"):
    return task_file(
        tmp_path, f"{name}.yaml", SLEEPY.format(name=name, nodes=nodes, setup=setup, run=run)
    )


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unreachable_host_is_never_reserved(sky, skyform_home, tmp_path):
    port = _closed_port()
    (skyform_home / "config.yaml").write_text(
        f"ssh_pools:\n  lab:\n    hosts:\n      - {{host: 127.0.0.1, port: {port}, user: nobody,"
        " cpus: 2, memory: 4}\n"
    )
    sky("plan", sleepy(tmp_path), "-o", "p.json", check=0)
    started = time.monotonic()
    result = sky("apply", "p.json")
    assert time.monotonic() - started < 30
    assert result.exit_code == 4  # no capacity: the pool's only host does not answer
    assert f"skipping ssh/lab/127.0.0.1:{port}" in result.stdout
    assert "0 free, healthy host(s)" in result.stderr and "Traceback" not in result.output
    assert json.loads(sky("status", "--json", check=0).stdout) == []  # nothing was left behind
    assert sky("plan", sleepy(tmp_path), "--detailed-exitcode").exit_code == 2


def test_host_that_refuses_the_key_after_reservation_leaves_nothing_behind(
    sky, skyform_home, make_ssh_nodes, tmp_path
):
    nodes = make_ssh_nodes(1)
    write_pool(skyform_home, nodes, [0])
    config = (skyform_home / "config.yaml").read_text()
    (skyform_home / "config.yaml").write_text(config.replace(str(nodes.key), str(nodes.wrong_key)))
    sky("plan", sleepy(tmp_path), "-o", "p.json", check=0)
    result = sky("apply", "p.json")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"rejected the key {nodes.wrong_key}" in result.stderr
    assert json.loads(sky("status", "--json", check=0).stdout) == []  # nothing made: no record
    write_pool(skyform_home, nodes, [0])  # the right key: the host was released, not kept
    sky("apply", sleepy(tmp_path), "-y", check=0)
    sky("down", "-y", "job", check=0)


def test_wrong_key_and_changed_host_key_are_refused(sky, skyform_home, fresh_ssh_nodes, tmp_path):
    nodes = fresh_ssh_nodes
    write_pool(skyform_home, nodes, [0])
    config = (skyform_home / "config.yaml").read_text()
    (skyform_home / "config.yaml").write_text(config.replace(str(nodes.key), str(nodes.wrong_key)))
    sky("plan", sleepy(tmp_path), "-o", "p.json", check=0)
    wrong = sky("apply", "p.json")
    assert wrong.exit_code == 1
    assert f"rejected the key {nodes.wrong_key}" in wrong.stderr
    assert json.loads(sky("status", "--json").stdout) == []

    write_pool(skyform_home, nodes, [0])
    h = nodes.handle(0)
    bogus = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOzMfAkC6jdvJb2fLrn0tYhH1o+dZPm6PnrQzQXHqg6s"
    (skyform_home / "known_hosts").write_text(f"[{h.host}]:{h.port} {bogus}\n")
    os.chmod(skyform_home / "known_hosts", 0o600)
    sky("plan", sleepy(tmp_path), "-o", "p.json", check=0)
    changed = sky("apply", "p.json")
    assert changed.exit_code == 1
    assert "host key" in changed.stderr and "changed" in changed.stderr
    assert "known-hosts forget" in changed.stderr
    assert json.loads(sky("status", "--json").stdout) == []


def test_node_killed_mid_run_fails_the_job_with_a_reason(
    sky, skyform_home, make_ssh_nodes, tmp_path
):
    nodes = make_ssh_nodes(2)
    write_pool(skyform_home, nodes, [0, 1])
    sky("plan", sleepy(tmp_path, nodes=2, run="sleep 60"), "-o", "p.json", check=0)
    sky("apply", "p.json", "--detach", check=0)
    nodes.kill_node(1)
    followed = sky("logs", "job", "--follow", timeout=60)
    assert followed.exit_code == 100  # the job failed (SkyPilot's JobExitCode.FAILED)
    job = json.loads(sky("queue", "job", "--json", check=0).stdout)[0]
    assert job["status"] == "FAILED", job
    status = sky("status", "--refresh", check=0)
    assert "node 1 lost" in status.stdout
    down = sky("down", "-y", "job", check=0)
    assert "not reachable, skipped" in down.stdout  # the dead node cannot be cleaned


def test_full_disk_on_a_node_fails_setup_with_the_reason(
    sky, skyform_home, make_ssh_nodes, tmp_path
):
    nodes = make_ssh_nodes(1)
    node = nodes.nodes[0]
    target = node.home / ".skyform_node"
    target.mkdir(mode=0o700)
    mount = nodes.in_node(
        0, "mount", "-t", "tmpfs", "-o", "size=64k,mode=700", "tmpfs", str(target)
    )
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.strip()}")
    nodes.in_node(0, "chown", f"{node.user}:{node.user}", str(target))
    write_pool(skyform_home, nodes, [0])
    task = sleepy(tmp_path, setup="head -c 1M /dev/zero > ~/.skyform_node/fill")
    sky("plan", task, "-o", "p.json", check=0)
    result = sky("apply", "p.json", timeout=60)
    assert result.exit_code == 1
    job = json.loads(sky("queue", "job", "--json", check=0).stdout)[0]
    assert job["status"] == "FAILED_SETUP"
    events = (
        sqlite3.connect(skyform_home / "state.db")
        .execute("SELECT message FROM events WHERE kind='job.failed_setup'")
        .fetchall()
    )
    assert any("No space left on device" in m for (m,) in events), events
    nodes.in_node(0, "umount", str(target))
    sky("down", "-y", "job", check=0)


def _apply_in_background(skyform_home, tmp_path, plan: str) -> subprocess.Popen:
    env = dict(os.environ, SKYFORM_HOME=str(skyform_home))
    return subprocess.Popen(
        [sys.executable, "-m", "skyform.cli.main", "apply", plan],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _job_status(skyform_home) -> str | None:
    # read-only: a plain connect would make an empty state.db before apply makes the real
    # one, and skyform refuses an empty state file (a new state is only a missing file)
    try:
        row = (
            sqlite3.connect(f"file:{skyform_home / 'state.db'}?mode=ro", uri=True)
            .execute("SELECT status FROM jobs ORDER BY job_id DESC LIMIT 1")
            .fetchone()
        )
    except sqlite3.Error:
        return None
    return row[0] if row else None


@pytest.mark.parametrize("point", ["setup", "run"])
def test_kill_9_of_apply_then_apply_converges(sky, skyform_home, pool, tmp_path, point):
    task = sleepy(tmp_path, nodes=2, setup="sleep 30", run="sleep 30")
    if point == "run":
        task = sleepy(tmp_path, nodes=2, setup="echo quick", run="sleep 30")
    sky("plan", task, "-o", "p.json", check=0)
    proc = _apply_in_background(skyform_home, tmp_path, "p.json")
    want = "SETTING_UP" if point == "setup" else "RUNNING"
    wait_until(lambda: _job_status(skyform_home) == want, 30.0)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

    replan = sky("plan", task, "-o", "p2.json", check=0)
    if point == "setup":  # never finished: carried on with, on the same hosts
        (job,) = json.loads(sky("queue", "job", "--json").stdout)
        assert job["status"] == "CANCELLED" and "stopped before the job ran" in job["reason"]
        assert "did not finish" in replan.stdout and "1 to change, 0 to destroy" in replan.stdout
        hosts = [n["node_id"] for n in json.loads(sky("status", "--json").stdout)[0]["nodes"]]
        fixed = task.read_text().replace("sleep 30", "echo quick")
        task.write_text(fixed)
        sky("plan", task, "-o", "p2.json", check=0)
        sky("apply", "p2.json", check=0)
        for i in range(2):  # the edited setup ran; the orphaned one was stopped first
            assert not [c for c in _cmdlines(pool, i) if "sleep 30" in c]
        (after,) = json.loads(sky("status", "--json").stdout)
        assert [n["node_id"] for n in after["nodes"]] == hosts  # not provisioned again
    else:  # the job was submitted detached and keeps running: nothing to do
        assert "No changes." in replan.stdout
    sky("down", "-y", "job", check=0)
    for i in range(2):  # nothing leaked on the hosts: no processes of skyform's jobs left
        cmdlines = _cmdlines(pool, i)
        assert not [c for c in cmdlines if "sleep" in c], cmdlines
    assert json.loads(sky("status", "--json", check=0).stdout) == []
    intervals = (
        sqlite3.connect(skyform_home / "state.db")
        .execute("SELECT COUNT(*) FROM usage WHERE ended_at IS NULL")
        .fetchone()[0]
    )
    assert intervals == 0


def _cmdlines(pool, i: int) -> list[str]:
    """Command lines of the processes of node i's user (its jobs and setups)."""
    paths = [Path(f"/proc/{p}/cmdline") for p in pool.user_pids(i)]
    found = []
    for path in paths:
        with contextlib.suppress(OSError):  # ended meanwhile
            found.append(path.read_text().replace("\0", " "))
    return found


def test_two_concurrent_applies_on_one_cluster(sky, skyform_home, pool, tmp_path):
    # a's setup outlasts everything below (the refused apply, up to 4 s, and the exec that
    # waits up to 20 s): with `sleep 8` a loaded machine let the exec find the lock free
    task = sleepy(tmp_path, setup="sleep 25", run="echo hi")
    sky("plan", task, "-o", "a.json", check=0)
    sky("plan", task, "-o", "old.json", check=0)
    first = _apply_in_background(skyform_home, tmp_path, "a.json")
    wait_until(lambda: _job_status(skyform_home) == "SETTING_UP", 30.0)
    # planned before a started: a has changed the cluster since, refused at once
    started = time.monotonic()
    old = sky("apply", "old.json")
    assert old.exit_code == 3 and "cluster job (provisioned) changed" in old.stderr
    assert time.monotonic() - started < 4  # no wait for the lock: nothing to wait for
    # anything else that changes the cluster meanwhile waits for a's lock, then gives up
    started = time.monotonic()
    second = sky("exec", "job", "echo hi")
    waited = time.monotonic() - started
    assert second.exit_code == 1
    assert "is locked by " in second.stderr and " pid " in second.stderr
    assert "skyform apply a.json" in second.stderr
    assert 4 < waited < 20  # waited briefly (SKYFORM_LOCK_WAIT, default 5 s), then gave up
    assert first.wait(timeout=90) == 0
    after = sky("apply", "old.json")
    assert after.exit_code == 3  # still stale once a is done
    sky("down", "-y", "job", check=0)
