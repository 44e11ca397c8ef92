"""`skyform exec` through the SSH connection keeper, as a user runs it: the same output and
exit code as with the keeper off, and `down` / `stop`'s kin end it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from e2ekit import task_file
from helpers import wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "exec"))
from test_keeper import keeper_pids

pytestmark = pytest.mark.e2e

TASK = "name: kept\nnum_nodes: 2\nresources: {infra: ssh/lab}\n"
COMMAND = "echo out-$SKYFORM_NODE_RANK; echo err-$GREETING >&2; exit 3"


def _exec(sky, *env: str):
    flags = [word for value in env for word in ("--env", value)]
    result = sky("exec", "kept", *flags, "--", COMMAND)
    return result.exit_code, sorted(re.sub(r"job \d+", "job N", result.output).splitlines())


@pytest.fixture
def kept(sky, pool, tmp_path):
    sky("launch", task_file(tmp_path, "kept.yaml", TASK), "-y", check=0)
    return sky


def test_exec_through_the_keeper_reads_as_with_it_off(kept, skyform_home, monkeypatch):
    through = [_exec(kept, "GREETING=hi") for _ in range(2)]  # starts it, then warm
    assert keeper_pids(skyform_home)
    monkeypatch.setenv("SKYFORM_SSH_KEEPER", "0")
    direct = _exec(kept, "GREETING=hi")
    assert through == [direct, direct]


def test_down_stops_the_clusters_keeper(kept, skyform_home):
    kept("exec", "kept", "true", check=0)
    assert keeper_pids(skyform_home)
    kept("down", "kept", "-y", check=0)
    wait_until(lambda: not keeper_pids(skyform_home), 10.0)
