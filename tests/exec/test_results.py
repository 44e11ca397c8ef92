"""How node states add up to a job status (SkyPilot's rules), and the env of a node."""

from __future__ import annotations

import json
import subprocess

import pytest
from execkit import local_nodes, make_cluster

from skyform.errors import ExecError
from skyform.exec.env import job_env, render_env_file
from skyform.exec.node_jobs import NodeJob, NodeJobState, parse_status_line, run_key, setup_key
from skyform.exec.results import JobState, aggregate
from skyform.state.models import JobStatus

S = NodeJobState


@pytest.mark.parametrize(
    ("states", "setup", "expected"),
    [
        ([], False, JobStatus.PENDING),
        ([S.PENDING, S.PENDING], False, JobStatus.PENDING),
        ([S.PENDING, S.RUNNING], False, JobStatus.RUNNING),
        ([S.RUNNING, S.SUCCEEDED], False, JobStatus.RUNNING),
        ([S.RUNNING, S.SUCCEEDED], True, JobStatus.SETTING_UP),
        ([S.SUCCEEDED, S.SUCCEEDED], False, JobStatus.SUCCEEDED),
        ([S.SUCCEEDED, S.FAILED], False, JobStatus.FAILED),
        ([S.RUNNING, S.FAILED], False, JobStatus.FAILED),  # one failed node fails the job
        ([S.SUCCEEDED, S.FAILED], True, JobStatus.FAILED_SETUP),
        ([S.CANCELLED, S.FAILED], False, JobStatus.FAILED),  # others cancelled after a failure
        ([S.CANCELLED, S.SUCCEEDED], False, JobStatus.CANCELLED),
        ([S.CANCELLED, S.RUNNING], False, JobStatus.CANCELLED),
        ([S.MISSING, S.RUNNING], False, JobStatus.FAILED),  # never started on a node
    ],
)
def test_aggregate(states, setup, expected):
    assert aggregate(states, setup=setup) is expected


def test_job_state_reports_exit_codes_reasons_and_a_summary():
    nodes = {
        1: NodeJob("k", S.FAILED, exit_code=3),
        0: NodeJob("k", S.SUCCEEDED, exit_code=0),
        2: NodeJob("k", S.FAILED, reason="disk full"),
    }
    state = JobState.of("k", nodes)
    assert list(state.nodes) == [0, 1, 2]
    assert state.exit_codes == {0: 0, 1: 3, 2: None}
    assert state.reasons == {2: "disk full"}
    assert state.summary() == "FAILED: node 1 exit 3; node 2 failed (disk full)"


def test_status_line_parsing():
    job = parse_status_line("k1 FAILED 2 1700000000.5 1700000001.25 the disk is full")
    assert job == NodeJob("k1", S.FAILED, 2, 1700000000.5, 1700000001.25, "the disk is full")
    assert parse_status_line("k1 RUNNING - 1.0 - -").reason is None
    with pytest.raises(ExecError, match="unexpected answer"):
        parse_status_line("garbage")


def test_keys_are_safe_and_include_the_cluster():
    assert run_key("my cluster", 7) == "my-cluster-7"
    assert run_key("c", 7, recovery_count=2) == "c-7-r2"
    assert setup_key("c", "ab" * 32) == "c-setup-" + "ab" * 8


def test_env_values_survive_a_shell_byte_for_byte(tmp_path):
    values = {
        "Q": 'it\'s "quoted"',
        "D": "$HOME ${X:-y} $(id)",
        "B": "`id`",
        "NL": "a\nb\n",
        "SP": "  lead and trail  ",
        "U": "ü ✓",
        "E": "",
    }
    text = render_env_file(values)
    script = ". /dev/stdin >/dev/null; for v in Q D B NL SP U E; do printf '%s\\0' \"${!v}\"; done"
    proc = subprocess.run(["bash", "-c", script], input=text.encode(), capture_output=True)
    assert proc.stdout.decode().split("\0")[:-1] == list(values.values())


def test_job_env_layers_task_envs_secrets_then_system_values(tmp_path):
    cluster = make_cluster(local_nodes(tmp_path, 2), gpus=0.5)
    env = job_env(
        cluster,
        1,
        task_id="tid",
        envs={"A": "1", "SKYFORM_NODE_RANK": "99"},
        secrets={"TOKEN": "s"},
        setup=True,
    )
    assert env["A"] == "1" and env["TOKEN"] == "s"
    assert env["SKYFORM_NODE_RANK"] == env["SKYPILOT_NODE_RANK"] == "1"  # not overridable
    assert env["SKYPILOT_SETUP_NODE_RANK"] == "1"
    assert env["SKYPILOT_SETUP_NODE_IPS"] == "127.0.0.1\n127.0.0.1"
    assert env["SKYFORM_NUM_GPUS_PER_NODE"] == "1"  # A100:0.5 still sees one GPU
    assert json.loads(env["SKYPILOT_CLUSTER_INFO"])["num_nodes"] == 2


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "A;rm", ""])
def test_invalid_env_names_are_refused(name):
    with pytest.raises(ExecError, match="not a valid environment variable name"):
        render_env_file({name: "v"})


def test_a_job_ended_when_its_last_node_says_not_when_the_client_looked():
    nodes = {
        0: NodeJob("k", S.SUCCEEDED, 0, started_at=100.0, ended_at=110.0),
        1: NodeJob("k", S.FAILED, 3, started_at=100.0, ended_at=112.5),
    }
    assert JobState.of("k", nodes).ended_at(noticed=130.0) == 112.5
    # a node without an end (or one that did not answer): when the client saw it end
    partial = {0: nodes[0], 1: NodeJob("k", S.MISSING)}
    assert JobState.of("k", partial).ended_at(noticed=130.0) == 130.0
    # a node clock ahead of the client's never puts the end in the client's future
    assert JobState.of("k", nodes).ended_at(noticed=111.0) == 111.0
