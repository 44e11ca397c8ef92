"""The job API on a real 3-node sshd cluster and on local directory nodes (same behaviour)."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import pytest
from execkit import job_spec

from skyform.errors import ExecError
from skyform.exec import node_jobs
from skyform.exec.connect import LocalRunner
from skyform.exec.run import open_cluster
from skyform.exec.runner import NodeRunner
from skyform.exec.ssh import SSHRunner
from skyform.state.models import JobStatus

NASTY = 'it\'s a "secret" $HOME `id -u` \\ ; rm -rf / #\n\tsecond line  \n-ü-'


def _read(session, rank: int, path: str) -> bytes:
    return session.runners[rank].run(f"cat {path}").raw_stdout


def _vars(session, rank: int) -> dict[str, str]:
    """The NUL-separated `name\\0value\\0` pairs a job wrote to ~/vars.bin."""
    parts = _read(session, rank, "~/vars.bin").decode().split("\0")
    return dict(zip(parts[0::2], parts[1::2], strict=False))


DUMP = 'for v in {names}; do printf "%s\\0%s\\0" "$v" "${{!v}}"; done > ~/vars.bin; pwd > ~/cwd.txt'


def test_every_node_gets_its_rank_ips_counts_and_cluster_info(cluster):
    names = [
        f"{p}_{n}"
        for p in ("SKYFORM", "SKYPILOT")
        for n in ("NODE_RANK", "NODE_IPS", "NUM_NODES", "NUM_GPUS_PER_NODE", "TASK_ID")
    ]
    names += ["SKYFORM_CLUSTER_INFO", "SKYFORM_RECOVERY_COUNT", "SKYPILOT_SETUP_NODE_RANK"]
    spec = job_spec(run=DUMP.format(names=" ".join(names)), envs={"GREETING": "hi there"})
    with open_cluster(cluster) as session:
        session.submit(spec, job_key="envs", task_id="task-42", recovery_count=1)
        final = session.wait("envs", timeout=30)
        assert final.status is JobStatus.SUCCEEDED, final.summary()
        ips = "\n".join(n.ip for n in cluster.nodes)
        gpus = str(int(cluster.offer.accelerator_count))
        for node in cluster.nodes:
            got = _vars(session, node.rank)
            for prefix in ("SKYFORM", "SKYPILOT"):
                assert got[f"{prefix}_NODE_RANK"] == str(node.rank)
                assert got[f"{prefix}_NODE_IPS"] == ips
                assert got[f"{prefix}_NUM_NODES"] == "3"
                assert got[f"{prefix}_NUM_GPUS_PER_NODE"] == gpus
                assert got[f"{prefix}_TASK_ID"] == "task-42"
            assert got["SKYFORM_RECOVERY_COUNT"] == "1"
            assert got["SKYPILOT_SETUP_NODE_RANK"] == ""  # only set during setup
            info = json.loads(got["SKYFORM_CLUSTER_INFO"])
            assert info["cluster_name"] == cluster.name and info["num_nodes"] == 3
            assert _read(session, node.rank, "~/cwd.txt").decode().strip() == str(
                _home(session.runners[node.rank])
            )


def _home(runner: NodeRunner) -> str:
    return runner.run("cd ~ && pwd -P").stdout.strip()


def test_envs_and_secrets_arrive_byte_exact_and_secrets_leak_nowhere(cluster, monkeypatch):
    commands: list[str] = []
    for cls in (SSHRunner, LocalRunner):
        original = cls.run

        def spy(self, cmd, *a, _original=original, **kw):
            commands.append(cmd + repr(kw.get("env")))
            return _original(self, cmd, *a, **kw)

        monkeypatch.setattr(cls, "run", spy)
    envs = {"PLAIN": NASTY, "EMPTY": "", "TRAILING_NL": "x\n\n"}
    secrets = {"API_TOKEN": "tok-" + NASTY}
    script = (
        'printf "%s" "$PLAIN" > ~/plain.out; printf "%s" "$API_TOKEN" > ~/secret.out; '
        'printf "%s" "$TRAILING_NL" > ~/nl.out; printf "[%s]" "$EMPTY" > ~/empty.out; '
        "echo visible-output; sleep 1.5"
    )
    spec = job_spec(run=script, envs=envs, secrets=["API_TOKEN"])
    with open_cluster(cluster) as session:
        session.submit(spec, job_key="sec", task_id="t", secrets=secrets)
        time.sleep(0.5)  # the job is running: look at every process's command line
        assert not [c for c in _cmdlines() if b"tok-it" in c]
        for rank in session.runners:  # the env file is gone as soon as the job started
            ls = session.runners[rank].run(f"ls ~/{node_jobs.NODE_BASE}/jobs/sec").stdout.split()
            assert "script" in ls and "env" not in ls
        final = session.wait("sec", timeout=30)
        assert final.status is JobStatus.SUCCEEDED, final.summary()
        for rank in session.runners:
            assert _read(session, rank, "~/plain.out").decode() == NASTY
            assert _read(session, rank, "~/secret.out").decode() == secrets["API_TOKEN"]
            assert _read(session, rank, "~/nl.out") == b"x\n\n"
            assert _read(session, rank, "~/empty.out") == b"[]"
            job_dir = f"~/{node_jobs.NODE_BASE}/jobs/sec"
            leftovers = session.runners[rank].run(f"cat {job_dir}/* 2>/dev/null").raw_stdout
            assert b"tok-" not in leftovers
            assert b"visible-output" in leftovers
        lines = [line.text for line in session.logs("sec")]
        assert lines.count("visible-output") == 3
        assert not any("tok-" in line for line in lines)
    assert commands and not [c for c in commands if "tok-" in c]


def _cmdlines() -> list[bytes]:
    """The command line of every process on this machine (node processes included)."""
    found = []
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            found.append(path.read_bytes())
    return found


def test_bad_secret_errors_do_not_echo_the_value(cluster):
    spec = job_spec(run="true", secrets=["TOKEN"])
    with open_cluster(cluster) as session:
        with pytest.raises(ExecError) as err:
            session.submit(spec, job_key="nul", task_id="t", secrets={"TOKEN": "hunter2\0x"})
        assert "TOKEN" in err.value.message and "hunter2" not in str(err.value)
        with pytest.raises(ExecError, match="secret TOKEN has no value"):
            session.submit(spec, job_key="nul", task_id="t", secrets={})


def test_setup_runs_once_per_digest_and_again_when_it_changes(cluster):
    counter = 'echo run >> ~/setup-count; echo "rank=$SKYPILOT_SETUP_NODE_RANK"'
    with open_cluster(cluster) as session:
        first = session.setup(job_spec(setup=counter), task_id="t")
        assert first.status is JobStatus.SUCCEEDED and not first.skipped
        assert first.exit_codes == {0: 0, 1: 0, 2: 0}
        again = session.setup(job_spec(setup=counter), task_id="t")
        assert again.status is JobStatus.SUCCEEDED and again.skipped
        changed = session.setup(job_spec(setup=counter, setup_digest="d" * 64), task_id="t")
        assert changed.status is JobStatus.SUCCEEDED and not changed.skipped
        for rank in session.runners:
            assert _read(session, rank, "~/setup-count").decode().count("run") == 2
        key = node_jobs.setup_key(cluster.name, "s" * 64)
        logs = {line.rank: line.text for line in session.logs(key)}
        assert logs == {0: "rank=0", 1: "rank=1", 2: "rank=2"}


def test_setup_started_by_a_killed_apply_is_waited_for_not_rerun(cluster):
    spec = job_spec(setup="sleep 1; echo once >> ~/count")
    key = node_jobs.setup_key(cluster.name, spec.setup_digest)
    with open_cluster(cluster) as first:
        first._launch(
            key, spec.setup, spec, task_id="t", secrets=None, recovery_count=0, setup=True
        )
    # the first apply is gone (its connections closed); its detached setup carries on
    with open_cluster(cluster) as second:
        done = second.setup(spec, task_id="t")
        assert done.status is JobStatus.SUCCEEDED
        for rank in second.runners:
            assert _read(second, rank, "~/count").decode() == "once\n"


def test_failing_setup_is_failed_setup_with_exit_codes_per_node(cluster):
    script = 'if [ "$SKYFORM_NODE_RANK" = 1 ]; then exit 7; fi; echo fine'
    events = []
    with open_cluster(cluster, on_event=lambda *e: events.append(e)) as session:
        state = session.setup(job_spec(setup=script), task_id="t")
        assert state.status is JobStatus.FAILED_SETUP
        assert state.exit_codes == {0: 0, 1: 7, 2: 0}
        assert "node 1 exit 7" in state.summary()
        # a retry runs a failed setup again (here it fails again)
        retry = session.setup(job_spec(setup=script), task_id="t")
        assert retry.status is JobStatus.FAILED_SETUP and not retry.skipped
    assert ("setup", 1, "failed (exit code 7)") in events


def test_one_failing_node_fails_the_run_and_cancels_the_others(cluster):
    script = 'if [ "$SKYFORM_NODE_RANK" = 2 ]; then exit 3; fi; sleep 20'
    with open_cluster(cluster) as session:
        session.submit(job_spec(run=script), job_key="fail", task_id="t")
        started = time.monotonic()
        final = session.wait("fail", timeout=30)
        assert time.monotonic() - started < 10
        assert final.status is JobStatus.FAILED
        assert final.exit_codes[2] == 3
        assert {final.nodes[0].state.value, final.nodes[1].state.value} == {"CANCELLED"}


def test_cancel_kills_every_process_of_the_job(cluster):
    script = "sleep 31.4159 & sleep 31.4159; wait"
    with open_cluster(cluster) as session:
        submitted = session.submit(job_spec(run=script), job_key="long", task_id="t")
        assert submitted.status is JobStatus.RUNNING
        time.sleep(0.3)
        assert _sleepers() >= 6
        state = session.cancel("long", grace=2)
        assert state.status is JobStatus.CANCELLED
        assert session.status("long").status is JobStatus.CANCELLED
    assert _sleepers() == 0


def _sleepers() -> int:
    return sum(b"31.4159" in c for c in _cmdlines())


def test_submit_is_idempotent_per_job_key(cluster):
    with open_cluster(cluster) as session:
        session.submit(job_spec(run="echo x >> ~/ran"), job_key="once", task_id="t")
        assert session.wait("once", timeout=30).status is JobStatus.SUCCEEDED
        again = session.submit(job_spec(run="echo x >> ~/ran"), job_key="once", task_id="t")
        assert again.status is JobStatus.SUCCEEDED
        assert _read(session, 0, "~/ran") == b"x\n"


def test_logs_per_node_all_nodes_and_follow(cluster):
    script = (
        'for i in 1 2 3; do echo "line $i from $SKYFORM_NODE_RANK"; sleep 0.3; done; printf tail'
    )
    with open_cluster(cluster) as session:
        session.submit(job_spec(run=script), job_key="logs", task_id="t")
        followed = [(line.rank, line.text) for line in session.logs("logs", follow=True, poll=0.1)]
        for rank in range(3):
            mine = [text for r, text in followed if r == rank]
            assert mine == [f"line {i} from {rank}" for i in (1, 2, 3)] + ["tail"]
        one = [line.text for line in session.logs("logs", rank=1)]
        assert one == ["line 1 from 1", "line 2 from 1", "line 3 from 1", "tail"]
        assert node_jobs.log_path("logs") == "~/.skyform_node/jobs/logs/log"


def test_followed_logs_end_when_the_job_ends_not_a_poll_later(cluster):
    with open_cluster(cluster) as session:
        session.submit(job_spec(run="sleep 0.2; echo done"), job_key="quick", task_id="t")
        started = time.monotonic()
        lines = [(line.rank, line.text) for line in session.logs("quick", follow=True, poll=5)]
        assert time.monotonic() - started < 3  # the node answers at the job's end
        assert sorted(lines) == [(0, "done"), (1, "done"), (2, "done")]
        final = session.wait("quick", timeout=30, followed=session.ranks())
        assert final.status is JobStatus.SUCCEEDED and final.exit_codes == {0: 0, 1: 0, 2: 0}


def test_a_node_failing_while_logs_are_followed_cancels_the_others(cluster):
    import threading

    script = 'echo "up $SKYFORM_NODE_RANK"; [ "$SKYFORM_NODE_RANK" = 1 ] && exit 4; sleep 20'
    with open_cluster(cluster) as session:
        session.submit(job_spec(run=script), job_key="ff", task_id="t")
        waited = []
        waiter = threading.Thread(
            target=lambda: waited.append(session.wait("ff", timeout=30, followed=session.ranks()))
        )
        started = time.monotonic()
        waiter.start()
        lines = sorted(line.text for line in session.logs("ff", follow=True))
        waiter.join(30)
        assert time.monotonic() - started < 10
        assert lines == ["up 0", "up 1", "up 2"]
        (final,) = waited
        assert final.status is JobStatus.FAILED and final.exit_codes[1] == 4
        assert {final.nodes[0].state.value, final.nodes[2].state.value} == {"CANCELLED"}


def test_a_session_not_prepared_installs_a_missing_or_old_runner_at_its_launch(cluster):
    with open_cluster(cluster, prepare=False) as session:  # as `exec` opens it
        base = f"~/{node_jobs.NODE_BASE}"
        session.runners[1].run(f"rm -rf {base}")
        session.runners[2].run(f"mkdir -p {base}/jobs && echo 'exit 9' > {base}/runner.sh")
        session.submit(job_spec(run="echo hi"), job_key="lazy", task_id="t")
        lines = sorted((line.rank, line.text) for line in session.logs("lazy", follow=True))
        assert lines == [(0, "hi"), (1, "hi"), (2, "hi")]
        assert session.wait("lazy", timeout=30).status is JobStatus.SUCCEEDED
        for rank in range(3):
            installed = _read(session, rank, f"{base}/runner.sh").decode()
            assert installed == node_jobs.runner_script()


def test_status_of_an_unknown_job_is_failed_with_a_reason(cluster):
    with open_cluster(cluster) as session:
        state = session.status("never-submitted")
        assert state.status is JobStatus.FAILED
        assert state.reasons[0] == "no record of this job on the node"


def test_a_job_read_while_it_ends_is_never_reported_as_lost(tmp_path):
    """The runner records its result, then exits: a status read between "no result yet" and
    "runner gone" must still find the result (a managed job restarted healthy jobs when it
    said "exited without recording a result")."""
    from execkit import local_nodes

    from skyform.exec.runner import Timeouts

    runner = LocalRunner(local_nodes(tmp_path, 1)[0], Timeouts())
    node_jobs.prepare_node(runner)
    seen = []
    for i in range(30):
        node_jobs.launch(runner, f"quick-{i}", env_file="export A=1\n", script="exit 0\n")
        while not (job := node_jobs.status(runner, [f"quick-{i}"])[f"quick-{i}"]).state.is_terminal:
            pass
        seen.append(job.state)
    assert set(seen) == {node_jobs.NodeJobState.SUCCEEDED}


def test_a_job_cancelled_right_after_it_was_submitted_never_runs(cluster):
    """The runner ignores TERM to record the result; the job must not inherit that (a cancel
    just after launch reached it while it still did, and the job ran on regardless)."""
    with open_cluster(cluster) as session:
        for i in range(10):
            # 3 s: long enough that a loaded machine still cancels before the job would touch
            # its file, so a file found means the job outlived the cancel, not a slow cancel.
            spec = job_spec(run=f"sleep 3; touch ~/ran-{i}")
            session.submit(spec, job_key=f"early-{i}", task_id="t")
            assert session.cancel(f"early-{i}", grace=3).status is JobStatus.CANCELLED
        time.sleep(4)
        for rank, runner in session.runners.items():
            ran = [f for f in runner.run("ls ~").stdout.split() if f.startswith("ran-")]
            assert ran == [], rank
