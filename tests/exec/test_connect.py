"""Connecting to real sshd nodes: host keys, and failures that must be quick and clear."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from skyform.errors import NodeUnreachable
from skyform.exec.connect import open_runner, wait_for_ssh
from skyform.exec.hostkeys import HostKey, KnownHosts
from skyform.exec.runner import Timeouts
from skyform.state.models import NodeHandle

FAST = Timeouts(connect=1.0, banner=1.0, auth=2.0, channel=2.0, command=10.0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_first_contact_records_the_key_in_openssh_format(fresh_ssh_nodes, skyform_home):
    node = fresh_ssh_nodes.handle(0)
    with open_runner(node) as runner:
        assert runner.run("echo ok").stdout == "ok\n"
    known = (skyform_home / "known_hosts").read_text().splitlines()
    assert known == [f"[{node.host}]:{node.port} {fresh_ssh_nodes.nodes[0].public_host_key()}"]
    assert oct((skyform_home / "known_hosts").stat().st_mode & 0o777) == "0o600"


def test_commands_reuse_one_connection_with_nodelay(fresh_ssh_nodes):
    with open_runner(fresh_ssh_nodes.handle(0)) as runner:
        transport = runner.conn.transport
        for _ in range(3):
            assert runner.run("true").ok
        assert runner.conn.transport is transport
        sock = transport.sock
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        result = runner.run("echo out; echo err >&2; exit 5")
        assert (result.exit_code, result.stdout, result.stderr) == (5, "out\n", "err\n")


def test_output_sent_with_the_end_of_a_command_is_never_lost(fresh_ssh_nodes):
    """A command that prints and exits at once sends its output, EOF, exit status and CLOSE
    nearly together. Read in the wrong order, the answer came back empty now and then (a job
    launch failed with "unexpected answer from the job runner: ''"); our EOF sent after
    paramiko had answered the CLOSE made OpenSSH drop the connection and every command on it
    ("lost the connection ... the node went away"). Four threads share one connection, as a
    fan-out's launcher, log follower and watcher do."""
    with open_runner(fresh_ssh_nodes.handle(0)) as runner:
        answers: list[tuple[int, str, str]] = []

        def many(tag: int) -> None:
            for i in range(60):
                result = runner.run(f"echo {tag}-{i}; echo e{i} >&2")
                answers.append((result.exit_code, result.stdout, result.stderr))

        threads = [threading.Thread(target=many, args=(t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    expected = {(0, f"{t}-{i}\n", f"e{i}\n") for t in range(4) for i in range(60)}
    assert len(answers) == 240 and set(answers) == expected


def test_changed_host_key_is_refused_until_forgotten(make_ssh_nodes):
    nodes = make_ssh_nodes(1)
    node = nodes.handle(0)
    with open_runner(node, timeouts=FAST):
        pass
    nodes.rotate_host_key(0)
    with pytest.raises(NodeUnreachable) as err:
        open_runner(node, timeouts=FAST)
    where = f"{node.host}:{node.port}"
    assert f"host key for {where} changed" in err.value.message
    assert "man-in-the-middle" in err.value.message
    assert f"skyform known-hosts forget {where}" in err.value.hint
    assert KnownHosts().forget(node.host, node.port) == 1
    with open_runner(node, timeouts=FAST) as runner:
        assert runner.run("true").ok


def test_a_pre_seeded_key_is_trusted_and_a_wrong_one_refused(make_ssh_nodes):
    nodes = make_ssh_nodes(2)
    good, other = nodes.handle(0), nodes.handle(1)
    known = KnownHosts()
    known.remember(good.host, good.port, HostKey.parse(nodes.nodes[0].public_host_key()))
    known.remember(other.host, other.port, HostKey.parse(nodes.nodes[0].public_host_key()))
    with open_runner(good, timeouts=FAST) as runner:
        assert runner.run("true").ok
    with pytest.raises(NodeUnreachable, match="changed"):
        open_runner(other, timeouts=FAST)


def test_nothing_listening_is_cannot_reach_within_milliseconds():
    node = NodeHandle(rank=3, host="127.0.0.1", port=_free_port(), user="x", ip="1", node_id="n")
    started = time.monotonic()
    with pytest.raises(NodeUnreachable) as err:
        open_runner(node, timeouts=FAST)
    assert time.monotonic() - started < 1
    assert err.value.message.startswith(f"cannot reach node 3 at 127.0.0.1:{node.port}")
    assert "connection refused" in err.value.message and err.value.hint


def test_unroutable_address_gives_up_after_the_connect_timeout():
    node = NodeHandle(rank=0, host="192.0.2.1", port=22, user="x", ip="1", node_id="n")
    started = time.monotonic()
    with pytest.raises(NodeUnreachable, match=r"^cannot reach node 0 at 192\.0\.2\.1:22"):
        open_runner(node, timeouts=FAST)
    assert time.monotonic() - started < FAST.connect + 1


def test_wrong_key_names_the_key_and_the_user(fresh_ssh_nodes):
    node = fresh_ssh_nodes.handle(0, key=fresh_ssh_nodes.wrong_key)
    with pytest.raises(NodeUnreachable) as err:
        open_runner(node, timeouts=FAST)
    assert err.value.message == (
        f"node 0 ({node.host}:{node.port}) rejected the key {fresh_ssh_nodes.wrong_key} "
        f"for user {node.user}"
    )
    assert "authorized_keys" in err.value.hint


def test_missing_identity_file_is_reported_before_connecting(fresh_ssh_nodes, tmp_path):
    node = fresh_ssh_nodes.handle(0, key=tmp_path / "nope")
    with pytest.raises(NodeUnreachable, match=r"identity file .*nope does not exist"):
        open_runner(node, timeouts=FAST)


def test_frozen_node_is_a_banner_timeout_not_a_hang(fresh_ssh_nodes):
    node = fresh_ssh_nodes.handle(2)
    fresh_ssh_nodes.freeze_node(2)
    try:
        started = time.monotonic()
        with pytest.raises(NodeUnreachable) as err:
            open_runner(node, timeouts=FAST)
        assert time.monotonic() - started < FAST.banner + 1.5
    finally:
        fresh_ssh_nodes.resume_node(2)
    assert "sent no SSH banner within 1s" in err.value.message
    assert "frozen" in err.value.message
    assert err.value.reason == "banner"


def test_wait_for_ssh_retries_until_a_booting_node_answers(make_ssh_nodes):
    nodes = make_ssh_nodes(2)
    nodes.kill_node(1)
    outcome: list[object] = []

    def wait() -> None:
        try:
            wait_for_ssh(nodes.handles(), timeout=15, timeouts=FAST, interval=0.2)
            outcome.append(time.monotonic() - started)
        except NodeUnreachable as exc:
            outcome.append(exc)

    started = time.monotonic()
    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(1.0)
    nodes.start_node(1)
    waiter.join(timeout=20)
    assert len(outcome) == 1 and isinstance(outcome[0], float), outcome
    assert 1.0 < outcome[0] < 8


def test_wait_for_ssh_gives_up_with_the_nodes_error(make_ssh_nodes):
    nodes = make_ssh_nodes(1)
    nodes.kill_node(0)
    started = time.monotonic()
    gave_up = r"gave up waiting 1\.5s for SSH: cannot reach node 0"
    with pytest.raises(NodeUnreachable, match=gave_up):
        wait_for_ssh(nodes.handles(), timeout=1.5, timeouts=FAST, interval=0.2)
    assert time.monotonic() - started < 4


def test_a_command_that_outlives_its_timeout_fails_fast(fresh_ssh_nodes):
    with open_runner(fresh_ssh_nodes.handle(0), timeouts=FAST) as runner:
        started = time.monotonic()
        with pytest.raises(NodeUnreachable, match=r"did not finish a command within 0\.5s"):
            runner.run("sleep 5", timeout=0.5)
        assert time.monotonic() - started < 2
        assert runner.run("echo still-usable").stdout == "still-usable\n"


def test_put_text_is_atomic_private_and_creates_parents(fresh_ssh_nodes):
    with open_runner(fresh_ssh_nodes.handle(0)) as runner:
        runner.put_text("v1", "~/a/b/file", 0o600)
        runner.put_text("v2", "~/a/b/file", 0o600)
        path = fresh_ssh_nodes.nodes[0].home / "a/b/file"
        assert path.read_text() == "v2"
        assert oct(path.stat().st_mode & 0o777) == "0o600"
        assert os.listdir(path.parent) == ["file"]  # no temp files left behind
