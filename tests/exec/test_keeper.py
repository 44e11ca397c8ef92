"""The SSH connection keeper (skyform/exec/keeper.py) on real sshd nodes: a warm session
reuses its connections, answers exactly as the direct path does, and every way the keeper
can fail ends on the direct path or in the direct path's error — never a command run twice."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import sshnodes
from execkit import make_cluster
from helpers import wait_until

from skyform.errors import NodeUnreachable
from skyform.exec import keeperwire
from skyform.exec.keeperclient import KeeperRunner, stop_keepers
from skyform.exec.run import open_cluster
from skyform.state.models import ClusterHandle

REPO = Path(__file__).resolve().parents[2]


def keeper_pids(home: Path) -> list[int]:
    """Keeper processes serving this SKYFORM_HOME, found as a user would (ps)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if b"skyform.exec.keeper" not in (proc / "cmdline").read_bytes():
                continue
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"SKYFORM_HOME={home}".encode() in env:
            found.append(int(proc.name))
    return found


def run_all(cluster: ClusterHandle, cmd: str, **kw) -> dict:
    with open_cluster(cluster, prepare=False) as session:
        outcomes = session.fan_out(lambda r, runner: runner.run(cmd, **kw), prepared=False)
    return {r: o.value if o.ok else o.error for r, o in outcomes.items()}


@pytest.fixture
def known(fresh_ssh_nodes) -> ClusterHandle:
    """Two session nodes whose host keys are recorded (first contact is always direct)."""
    cluster = make_cluster(fresh_ssh_nodes.handles()[:2])
    run_all(cluster, "true")
    return cluster


@pytest.fixture
def logged_nodes(make_ssh_nodes, monkeypatch):
    """A node whose sshd logs each login ("Accepted publickey"), host key recorded."""
    monkeypatch.setattr(
        sshnodes, "SSHD_CONFIG", sshnodes.SSHD_CONFIG.replace("LogLevel ERROR", "LogLevel INFO")
    )
    nodes = make_ssh_nodes(1)
    run_all(make_cluster(nodes.handles()), "true")
    return nodes


def logins(nodes) -> int:
    return (nodes.nodes[0].etc / "sshd.log").read_text().count("Accepted publickey")


def test_warm_sessions_log_in_once_through_the_keeper(logged_nodes):
    cluster = make_cluster(logged_nodes.handles())
    before = logins(logged_nodes)
    for _ in range(3):
        assert run_all(cluster, "echo hi")[0].stdout == "hi\n"
    assert logins(logged_nodes) == before + 1  # the keeper's one connection, then no more


def test_a_session_served_by_the_keeper_never_loads_paramiko(known, tmp_path):
    handle = tmp_path / "cluster.json"
    handle.write_text(known.model_dump_json())
    script = (
        "import sys\n"
        "from skyform.exec.run import open_cluster\n"
        "from skyform.state.models import ClusterHandle\n"
        f"c = ClusterHandle.model_validate_json(open({str(handle)!r}).read())\n"
        "with open_cluster(c) as s:\n"
        "    out = s.fan_out(lambda r, x: x.run('echo ok'))\n"
        "    kinds = {type(x).__name__ for x in s.runners.values()}\n"
        "print(sorted(kinds), [o.value.stdout for o in out.values()], 'paramiko' in sys.modules)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for _ in range(2):  # the first starts the keeper, the second finds it
        proc = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env
        )
    assert proc.stdout == "['KeeperRunner'] ['ok\\n', 'ok\\n'] False\n", proc.stderr


COMMANDS = [
    ("printf 'a\\xffb\\n'; echo err >&2; exit 7", {}),
    ("echo $GREETING; cat", {"env": {"GREETING": "it's me"}, "stdin": b"in\x00put"}),
    ("head -c 300000 /dev/zero | tr '\\0' x", {}),
]


def test_answers_match_the_direct_path_byte_for_byte(known, monkeypatch):
    kept = [run_all(known, cmd, **kw) for cmd, kw in COMMANDS]
    monkeypatch.setenv(keeperwire.ENABLE_ENV, "0")
    direct = [run_all(known, cmd, **kw) for cmd, kw in COMMANDS]
    assert kept == direct


def test_a_command_timeout_reads_as_on_the_direct_path(known, monkeypatch):
    def timed_out() -> tuple[str, str | None, str]:
        error = run_all(known, "sleep 5", timeout=1)[0]
        assert isinstance(error, NodeUnreachable)
        return error.message, error.hint, error.reason

    kept = timed_out()
    monkeypatch.setenv(keeperwire.ENABLE_ENV, "0")
    assert kept == timed_out()


def test_the_socket_is_for_this_user_only(known, skyform_home):
    run_all(known, "true")
    [sock] = (skyform_home / "keepers").glob("*.sock")
    modes = (stat.S_IMODE(sock.stat().st_mode), stat.S_IMODE(sock.parent.stat().st_mode))
    assert modes == (0o600, 0o700)


def test_a_keeper_folder_that_exists_keeps_its_mode(fresh_ssh_nodes, skyform_home):
    """Only the folders skyform makes get its 0700; one that was there is left as it is."""
    folder = skyform_home / "keepers"
    folder.mkdir()
    os.chmod(folder, 0o755)
    cluster = make_cluster(fresh_ssh_nodes.handles()[:1])
    run_all(cluster, "true")  # first contact: the host key is recorded, direct
    run_all(cluster, "true")  # the keeper starts, its socket in the folder
    [sock] = folder.glob("*.sock")
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755


def test_the_key_and_passphrase_reach_the_keeper_through_a_pipe_only(
    known, skyform_home, monkeypatch
):
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "team-secret")
    run_all(known, "true")
    [pid] = keeper_pids(skyform_home)
    key = Path(known.nodes[0].identity_file or "").read_bytes().split(b"\n")[1]
    seen = Path(f"/proc/{pid}/cmdline").read_bytes() + Path(f"/proc/{pid}/environ").read_bytes()
    assert (b"team-secret" in seen, key in seen) == (False, False)


def test_an_idle_keeper_exits(known, skyform_home, monkeypatch):
    monkeypatch.setenv(keeperwire.IDLE_ENV, "1")
    run_all(known, "true")
    assert keeper_pids(skyform_home)
    wait_until(lambda: not keeper_pids(skyform_home), 10.0)


def test_stop_keepers_ends_the_clusters_keeper(known, skyform_home):
    run_all(known, "true")
    stop_keepers(known.name)
    wait_until(lambda: not keeper_pids(skyform_home), 10.0)


def test_a_keeper_killed_before_a_command_falls_back_to_direct_connections(known, skyform_home):
    run_all(known, "true")
    with open_cluster(known) as session:
        for pid in keeper_pids(skyform_home):
            os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not keeper_pids(skyform_home), 10.0)
        outcomes = session.fan_out(lambda r, x: x.run("echo ok; cat", stdin="in"))
        answers = [o.value.stdout if o.ok else o.error for o in outcomes.values()]
    assert answers == ["ok\nin", "ok\nin"]


def test_the_next_session_after_a_killed_keeper_gets_a_new_one(known, skyform_home):
    run_all(known, "true")
    [old] = keeper_pids(skyform_home)
    os.kill(old, signal.SIGKILL)
    wait_until(lambda: not keeper_pids(skyform_home), 10.0)
    assert run_all(known, "echo ok")[0].stdout == "ok\n"
    assert keeper_pids(skyform_home) not in ([], [old])


def test_a_keeper_killed_during_a_command_is_a_lost_node_not_a_rerun(known, skyform_home):
    run_all(known, "true")
    with open_cluster(known, prepare=False) as session:
        runner = session.runners[0]
        assert isinstance(runner, KeeperRunner)
        result: list[object] = []

        def run() -> None:
            try:
                result.append(runner.run("echo x >> ~/ran; sleep 3"))
            except NodeUnreachable as exc:
                result.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        wait_until(lambda: (known_home(known) / "ran").exists(), 10.0)
        for pid in keeper_pids(skyform_home):
            os.kill(pid, signal.SIGKILL)
        thread.join(10)
        ran = (known_home(known) / "ran").read_text()
    [error] = result
    assert isinstance(error, NodeUnreachable)
    assert (error.reason, ran) == ("lost", "x\n")


def known_home(cluster: ClusterHandle) -> Path:
    user = cluster.nodes[0].user
    line = next(
        ln for ln in Path("/etc/passwd").read_text().splitlines() if ln.startswith(f"{user}:")
    )
    return Path(line.split(":")[5])


def test_a_changed_host_key_is_refused_as_on_the_direct_path(make_ssh_nodes, monkeypatch):
    nodes = make_ssh_nodes(1)
    cluster = make_cluster(nodes.handles())
    run_all(cluster, "true")  # first contact: the key is recorded
    assert run_all(cluster, "echo ok")[0].stdout == "ok\n"  # the keeper holds a connection
    nodes.rotate_host_key(0)
    with pytest.raises(NodeUnreachable) as kept:
        run_all(cluster, "echo ok")
    monkeypatch.setenv(keeperwire.ENABLE_ENV, "0")
    with pytest.raises(NodeUnreachable) as direct:
        run_all(cluster, "echo ok")
    assert (kept.value.message, kept.value.reason) == (direct.value.message, "host_key")


def test_a_socket_path_too_long_for_unix_sockets_connects_directly(known, tmp_path, monkeypatch):
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    monkeypatch.setenv("SKYFORM_HOME", str(deep))
    run_all(known, "true")  # records the host keys under the new home
    with open_cluster(known) as session:
        kinds = {type(r).__name__ for r in session.runners.values()}
    assert kinds == {"SSHRunner"}
