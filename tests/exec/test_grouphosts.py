"""A job group's names on a node (exec/grouphosts.py), run for real on local directory nodes:
/etc/hosts where the node user may write it on a machine of its own, libnss_wrapper
elsewhere (the sshd-node e2e, tests/e2e/test_job_groups_ssh.py, covers a non-root user)."""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest
from execkit import local_nodes, make_cluster

from skyform.exec import grouphosts
from skyform.exec.connect import LocalRunner
from skyform.exec.grouphosts import HostEntry
from skyform.exec.runner import Timeouts
from skyform.state.models import NodeHandle

HAS_NSS_WRAPPER = bool(
    glob.glob("/usr/lib/*/libnss_wrapper.so") + glob.glob("/lib/*/libnss_wrapper.so")
)


def _runner(tmp_path: Path) -> LocalRunner:
    return LocalRunner(local_nodes(tmp_path, 1)[0], Timeouts())


def _resolve(runner: LocalRunner, key: str, name: str) -> str:
    """What a job's script sees: the source line, then a lookup through the C library."""
    script = grouphosts.source_line(key) + f"getent hosts {name} | cut -d' ' -f1"
    return runner.check(script).stdout.strip()


def test_every_node_of_every_task_is_named_task_rank_group():
    a = make_cluster(
        [NodeHandle(rank=r, host="h", ip=f"10.0.0.{r + 1}", node_id=f"a{r}") for r in (1, 0)]
    )
    b = make_cluster([NodeHandle(rank=0, host="h", ip="10.0.1.1", node_id="b0")])
    assert grouphosts.entries("rl", [("trainer", a), ("data", b)]) == [
        HostEntry("10.0.0.1", "trainer-0.rl"),
        HostEntry("10.0.0.2", "trainer-1.rl"),
        HostEntry("10.0.1.1", "data-0.rl"),
    ]


@pytest.mark.skipif(not HAS_NSS_WRAPPER, reason="apt-get install libnss-wrapper")
def test_a_local_node_resolves_the_names_through_nss_wrapper_and_leaves_etc_hosts_alone(tmp_path):
    runner = _runner(tmp_path)
    before = Path("/etc/hosts").read_bytes()
    key = grouphosts.group_key(7, "rl")
    done = grouphosts.install(runner, key, "rl", [HostEntry("127.0.100.9", "server-0.rl")])
    assert done.mode == "nss"
    assert _resolve(runner, key, "server-0.rl") == "127.0.100.9"
    assert _resolve(runner, key, "localhost") in ("127.0.0.1", "::1")  # others as before
    # a recovered server has a new address: written again, seen by the next lookup
    grouphosts.install(runner, key, "rl", [HostEntry("127.0.100.10", "server-0.rl")])
    assert _resolve(runner, key, "server-0.rl") == "127.0.100.10"
    assert Path("/etc/hosts").read_bytes() == before


@pytest.mark.skipif(os.geteuid() != 0, reason="the system hosts file is written as root")
def test_a_root_node_gets_the_names_in_its_hosts_file_and_a_new_install_replaces_them(tmp_path):
    hosts = tmp_path / "hosts"  # stands for /etc/hosts
    hosts.write_text(
        "127.0.0.1 localhost\n10.9.9.9 other-0.elsewhere  # skyform-jobgroup elsewhere\n"
    )
    runner = _runner(tmp_path)
    key = grouphosts.group_key(3, "rl")
    first = [HostEntry("10.0.0.1", "server-0.rl"), HostEntry("10.0.0.2", "client-0.rl")]
    done = grouphosts.install(runner, key, "rl", first, system_hosts=str(hosts), own_machine=True)
    assert done.mode == "hosts"
    grouphosts.install(
        runner,
        key,
        "rl",
        [HostEntry("10.0.0.3", "server-0.rl")],
        system_hosts=str(hosts),
        own_machine=True,
    )
    assert hosts.read_text() == (
        "127.0.0.1 localhost\n"
        "10.9.9.9 other-0.elsewhere  # skyform-jobgroup elsewhere\n"
        "10.0.0.3 server-0.rl  # skyform-jobgroup rl\n"
    )
    env = runner.check(grouphosts.source_line(key) + 'echo "[${NSS_WRAPPER_HOSTS-}]"').stdout
    assert env.strip() == "[]"  # the job needs no wrapper there
