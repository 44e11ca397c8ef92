"""Nodes that die or fill up while a job runs: reported per node, quickly, never a hang."""

from __future__ import annotations

import threading
import time

import pytest
from execkit import job_spec, make_cluster

from skyform.errors import NodeUnreachable
from skyform.exec.node_jobs import NODE_BASE
from skyform.exec.run import open_cluster
from skyform.exec.runner import Timeouts
from skyform.state.models import JobStatus

FAST = Timeouts(connect=1.0, banner=1.0, auth=2.0, channel=2.0, command=10.0)


def test_node_killed_mid_run_is_reported_unreachable(make_ssh_nodes):
    nodes = make_ssh_nodes(3)
    events: list[tuple] = []
    session = open_cluster(
        make_cluster(nodes.handles()), timeouts=FAST, on_event=lambda *e: events.append(e)
    )
    with session:
        session.submit(job_spec(run="sleep 30"), job_key="victim", task_id="t")
        killer = threading.Timer(0.5, nodes.kill_node, args=(1,))
        killer.start()
        started = time.monotonic()
        state = session.wait("victim", timeout=30)
        detected_after = time.monotonic() - started  # not the harness's teardown of the node
        killer.join()
        assert detected_after < 5
        assert list(state.unreachable) == [1]
        assert "lost the connection to node 1" in state.unreachable[1].message
        assert not state.is_terminal
        with pytest.raises(NodeUnreachable, match="node 1"):
            state.raise_for_unreachable()
        assert any(e[0] == "run" and e[1] == 1 and "unreachable" in e[2] for e in events)
        # the others keep running; the unreachable node stays reported as such
        again = session.status("victim")
        assert {r: j.state.value for r, j in again.nodes.items()} == {0: "RUNNING", 2: "RUNNING"}
        assert list(again.unreachable) == [1]
        cancelled = session.cancel("victim", grace=1)
        assert {j.state.value for j in cancelled.nodes.values()} == {"CANCELLED"}


def _mount_tmpfs(nodes, i: int, path: str, size: str) -> None:
    home = nodes.nodes[i].home
    user = nodes.nodes[i].user
    target = home / path
    proc = nodes.in_node(
        i, "mount", "-t", "tmpfs", "-o", f"size={size},mode=700", "tmpfs", str(target)
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    chown = nodes.in_node(i, "chown", f"{user}:{user}", str(target))
    assert chown.returncode == 0, chown.stderr


def test_disk_full_on_a_node_fails_the_job_with_a_reason(make_ssh_nodes):
    nodes = make_ssh_nodes(2)
    cluster = make_cluster(nodes.handles())
    with open_cluster(cluster, timeouts=FAST) as session:  # creates ~/.skyform_node/jobs
        _mount_tmpfs(nodes, 1, f"{NODE_BASE}/jobs", "256k")
        # the job itself fills the disk, so its runner cannot record the result; node 0 ends
        # first (node 1's failure would cancel it, as SkyPilot does, if it were still running)
        fill = (
            f"head -c 2M /dev/zero > ~/{NODE_BASE}/jobs/fill; "
            '[ "$SKYFORM_NODE_RANK" = 0 ] || sleep 1; exit 0'
        )
        session.submit(job_spec(run=fill), job_key="fills", task_id="t")
        state = session.wait("fills", timeout=20)
        assert state.status is JobStatus.FAILED
        assert state.nodes[0].state.value == "SUCCEEDED"
        assert "No space left on device" in state.reasons[1], state.reasons
        # now a job cannot even be launched there: FAILED at once, with the reason
        started = time.monotonic()
        late = session.submit(job_spec(run="sleep 10"), job_key="late", task_id="t")
        assert time.monotonic() - started < 5
        assert late.status is JobStatus.FAILED
        assert "No space left on device" in late.reasons[1]
        assert late.nodes[0].state.value == "CANCELLED", late.summary()
        # and a setup that cannot start on one node fails setup, saying why
        setup = session.setup(job_spec(setup="echo ready"), task_id="t")
        assert setup.status is JobStatus.FAILED_SETUP
        assert setup.nodes[0].state.value == "SUCCEEDED"
        assert "No space left on device" in setup.reasons[1]
