"""Team mode: two users ("laptop" and "ci", two SKYFORM_HOMEs) share one PostgreSQL state
store and one pool of real sshd nodes. CI applies a reviewed plan; the laptop sees the
cluster, execs into it and takes it down; a plan made before CI's apply is refused naming
who applied it; two applies of one cluster serialise; an apply killed with -9 while it holds
the cluster's lock frees it within the lease time; a teammate execs with the key shared
through the store; PostgreSQL restarted mid-apply is ridden out, and one away for longer
fails the apply clearly while the job's own result on its node decides its record."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from e2ekit import task_file, wait_until, write_pool

from skyform.state.sqlcore import whoami

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "exec"))
from test_keeper import keeper_pids

pytestmark = pytest.mark.e2e

TASK = "name: train\nresources:\n  infra: ssh/lab\nrun: echo hello-$SKYFORM_NODE_RANK\n"


class Team:
    def __init__(self, root: Path, url: str, nodes) -> None:
        self.repo = root / "repo"  # the checkout both work from
        self.repo.mkdir()
        self.url = url
        self.nodes = nodes
        self.homes = {}
        for who in ("laptop", "ci"):
            home = root / who
            home.mkdir(mode=0o700)
            write_pool(home, nodes, range(2))
            self.homes[who] = home

    def env(self, who: str, **extra: str) -> dict[str, str]:
        home = str(self.homes[who])
        return (
            dict(
                os.environ,
                SKYFORM_HOME=home,
                SKYFORM_STATE_URL=self.url,
                COLUMNS="200",
                NO_COLOR="1",
            )
            | extra
        )

    def run(self, who: str, *args, check: int | None = None, timeout: float = 180, **extra):
        proc = subprocess.run(
            [sys.executable, "-m", "skyform.cli.main", *map(str, args)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd=self.repo,
            env=self.env(who, **extra),
            timeout=timeout,
        )
        if check is not None:
            assert proc.returncode == check, proc.stdout + proc.stderr
        return proc

    def spawn(self, who: str, *args, **extra) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "skyform.cli.main", *map(str, args)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=self.repo,
            env=self.env(who, **extra),
            start_new_session=True,
        )


@pytest.fixture
def team(tmp_path, pg_url, fresh_ssh_nodes):
    team = Team(tmp_path, pg_url, fresh_ssh_nodes)
    yield team
    team.run("ci", "down", "-a", "-y")


def test_ci_applies_the_reviewed_plan_and_the_laptop_sees_execs_and_downs_it(team):
    task_file(team.repo, "train.yaml", TASK)
    review = team.run("ci", "plan", "train.yaml", "--markdown", check=0)
    assert "train" in review.stdout  # what the pull request comment shows
    team.run("ci", "plan", "train.yaml", "-o", "plan.json", check=0)
    team.run("ci", "apply", "plan.json", check=0)
    status = json.loads(team.run("laptop", "status", "--json", check=0).stdout)
    assert [(c["name"], c["status"]) for c in status] == [("train", "UP")]
    ran = team.run("laptop", "exec", "train", "echo from-laptop-$SKYFORM_NODE_RANK", check=0)
    assert "from-laptop-0" in ran.stdout
    team.run("laptop", "down", "train", "-y", check=0)
    assert json.loads(team.run("ci", "status", "--json", check=0).stdout) == []


def test_the_laptop_s_keeper_ends_when_ci_takes_the_cluster_down(pg_url, fresh_ssh_nodes):
    """The laptop's exec left an SSH connection keeper for `train` under its SKYFORM_HOME;
    CI's `down` (another home) stops only CI's keepers: the laptop's sees in the shared store
    that the nodes are no longer the cluster's and exits, instead of idling for minutes."""
    from skyform.exec.keeper import STATE_CHECK

    # homes with short paths: a keeper's socket path must fit a Unix socket's 107 bytes
    root = Path(tempfile.mkdtemp(prefix="team-"))
    team = Team(root, pg_url, fresh_ssh_nodes)
    try:
        task_file(team.repo, "train.yaml", TASK)
        team.run("ci", "launch", "train.yaml", "-y", check=0)
        team.run("laptop", "exec", "train", "true", check=0)
        team.run("laptop", "exec", "train", "true", check=0)  # the first contact is direct
        laptop = team.homes["laptop"]
        (kept,) = keeper_pids(laptop)
        time.sleep(2 * STATE_CHECK)
        assert keeper_pids(laptop) == [kept]  # the cluster is up: it keeps serving
        team.run("ci", "down", "train", "-y", check=0)
        wait_until(lambda: not keeper_pids(laptop), 3 * STATE_CHECK + 10)
    finally:
        team.run("ci", "down", "-a", "-y")
        for pid in keeper_pids(team.homes["laptop"]):  # only when the test failed
            os.kill(pid, signal.SIGTERM)
        shutil.rmtree(root, ignore_errors=True)


def test_a_plan_made_before_a_teammates_apply_is_refused_naming_who_applied_it(team):
    task_file(team.repo, "train.yaml", TASK)
    team.run("laptop", "plan", "train.yaml", "-o", "laptop.json", check=0)
    team.run("ci", "plan", "train.yaml", "-o", "ci.json", check=0)
    team.run("ci", "apply", "ci.json", check=0)
    stale = team.run("laptop", "apply", "laptop.json")
    assert stale.returncode == 3, stale.stdout + stale.stderr
    assert "cluster train (up) changed since the plan was made" in stale.stderr
    assert f"train was changed by {whoami()} at " in stale.stderr
    assert "with `skyform apply ci.json`" in stale.stderr


def test_two_applies_of_one_cluster_serialise_and_the_second_is_stale(team):
    task_file(team.repo, "train.yaml", TASK)
    team.run("ci", "plan", "train.yaml", "-o", "a.json", check=0)
    team.run("laptop", "plan", "train.yaml", "-o", "b.json", check=0)
    first = team.spawn("ci", "apply", "a.json", "--lock-timeout", "120")
    second = team.spawn("laptop", "apply", "b.json", "--lock-timeout", "120")
    results = sorted(
        (p.wait(timeout=240), p.stdout.read() if p.stdout else "") for p in (first, second)
    )
    assert [code for code, _ in results] == [0, 3], results
    assert "changed since the plan was made" in results[1][1]
    status = json.loads(team.run("laptop", "status", "--json", check=0).stdout)
    assert [(c["name"], c["status"]) for c in status] == [("train", "UP")]


def test_an_apply_killed_holding_the_lock_frees_the_cluster_within_the_lease_time(team):
    slow = TASK.replace("run:", "setup: sleep 60\nrun:")
    task_file(team.repo, "train.yaml", slow)
    team.run("ci", "plan", "train.yaml", "-o", "plan.json", check=0)
    # as if CI ran on another machine: its pid cannot be checked here, only its lease
    held = team.spawn("ci", "apply", "plan.json", SKYFORM_LEASE_TTL="3")
    lease = _wait_for_lease(team, "cluster/train")
    os.killpg(held.pid, signal.SIGKILL)
    held.wait()
    _pretend_remote(team, lease)
    locked = team.run("laptop", "down", "train", "-y", SKYFORM_LOCK_WAIT="0")
    assert locked.returncode == 1 and "is locked by" in locked.stderr
    assert "skyform force-unlock train" in locked.stderr
    started = time.monotonic()
    team.run("laptop", "down", "train", "-y", SKYFORM_LOCK_WAIT="10", check=0)
    assert time.monotonic() - started < 10  # freed when its 3 s lease ran out
    assert json.loads(team.run("laptop", "status", "--json", check=0).stdout) == []


def test_a_teammate_with_the_passphrase_execs_with_the_key_shared_through_the_store(team):
    """CI's key for the pool lives only on the CI runner, which is gone after the apply: the
    laptop uses the copy sealed in the store (and the host keys CI recorded)."""
    ci_key = team.homes["ci"] / "pool-key"
    config = yaml.safe_load((team.homes["ci"] / "config.yaml").read_text())
    hosts = config["ssh_pools"]["lab"]["hosts"]
    ci_key.write_bytes(Path(hosts[0]["identity_file"]).read_bytes())
    ci_key.chmod(0o600)
    for host in hosts:
        host["identity_file"] = str(ci_key)
    (team.homes["ci"] / "config.yaml").write_text(yaml.safe_dump(config))
    task_file(team.repo, "train.yaml", TASK)
    secret = {"SKYFORM_PASSPHRASE": "team secret"}
    team.run("ci", "plan", "train.yaml", "-o", "plan.json", check=0)
    team.run("ci", "apply", "plan.json", check=0, **secret)
    ci_key.unlink()  # the CI runner vanished
    refused = team.run("laptop", "exec", "train", "echo hi")
    assert refused.returncode == 1
    assert "SSH key is in the team's state store, encrypted" in refused.stderr
    ran = team.run("laptop", "exec", "train", "echo via-shared-$SKYFORM_NODE_RANK", **secret)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "via-shared-0" in ran.stdout
    shared = (team.homes["laptop"] / "known_hosts").read_text().splitlines()
    assert shared and set(shared) <= set((team.homes["ci"] / "known_hosts").read_text().split("\n"))
    team.run("laptop", "down", "train", "-y", check=0, **secret)


COUNTED = TASK.replace("run:", "setup: sleep 4\nrun: echo ran >> ~/runs;")


def _runs(team: Team) -> int:
    """How many times the job ran, as its nodes counted (~/runs)."""
    homes = [team.nodes.nodes[i].home for i in range(2)]
    return sum(len((h / "runs").read_text().splitlines()) for h in homes if (h / "runs").exists())


def _ran_once_and_is_recorded_so(team: Team) -> None:
    """The job's record is its result on the node, its output is there, and nothing in the
    next plan would run it again."""
    plan = team.run("laptop", "plan", "train.yaml", "--detailed-exitcode")
    assert plan.returncode == 0, plan.stdout + plan.stderr  # no changes
    jobs = json.loads(team.run("laptop", "queue", "--json", check=0).stdout)
    assert [(j["job_id"], j["status"], j["exit_codes"]) for j in jobs] == [
        (1, "SUCCEEDED", {"0": 0})
    ], jobs
    logs = team.run("laptop", "logs", "train", "1", check=0)
    assert "hello-0" in logs.stdout and "never ran" not in logs.stdout + logs.stderr
    status = json.loads(team.run("laptop", "status", "--json", check=0).stdout)
    assert [(c["name"], c["status"]) for c in status] == [("train", "UP")]
    assert _runs(team) == 1


def test_postgresql_restarted_mid_apply_the_apply_carries_on_and_the_job_runs_once(team, pg_server):
    task_file(team.repo, "train.yaml", COUNTED)
    team.run("ci", "plan", "train.yaml", "-o", "plan.json", check=0)
    applying = team.spawn("ci", "apply", "plan.json")
    _wait_for_setup(team)  # where the job was once recorded CANCELLED after it had run
    pg_server.stop("fast")  # drops every connection, the apply's included
    pg_server.start()
    code = applying.wait(timeout=120)
    out = applying.stdout.read() if applying.stdout else ""
    assert code == 0, out
    assert "hello-0" in out
    _ran_once_and_is_recorded_so(team)


@pytest.mark.parametrize("first", ["plan", "logs"])
def test_postgresql_away_longer_than_the_retry_window_the_node_decides_the_record(
    team, pg_server, first
):
    """The apply gives up (exit 1, saying so) after submitting the job; once the database
    is back, the job is recorded as it ended on its node — not CANCELLED, not run again —
    by whichever command comes first: the next plan, or a teammate's `logs`."""
    task_file(team.repo, "train.yaml", COUNTED)
    team.run("ci", "plan", "train.yaml", "-o", "plan.json", check=0)
    applying = team.spawn("ci", "apply", "plan.json", SKYFORM_STATE_RETRY="1")
    _wait_for_setup(team)  # the job's next record is its submission
    pg_server.stop("fast")
    try:
        code = applying.wait(timeout=120)
        out = applying.stdout.read() if applying.stdout else ""
        assert code == 1, out
        assert "lost the connection to the state database" in out and "Traceback" not in out
        wait_until(lambda: _runs(team) == 1, timeout=30)  # the job ran on its node meanwhile
    finally:
        pg_server.start()
    if first == "logs":
        logs = team.run("laptop", "logs", "train", "1", check=0)
        assert "hello-0" in logs.stdout and "never ran" not in logs.stdout + logs.stderr
    _ran_once_and_is_recorded_so(team)


def _wait_for_lease(team: Team, name: str):
    from skyform.state.db import open_state

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open_state(url=team.url) as db:
            lease = db.get_lease(name)
            if lease is not None and db.get_cluster("train") is not None:
                return lease
        time.sleep(0.2)
    raise AssertionError(f"no lease {name} appeared")


def _wait_for_setup(team: Team) -> None:
    from skyform.state.db import open_state

    def setting_up() -> bool:
        with open_state(url=team.url) as db:
            job = db.get_job("train", 1)
            return job is not None and job.status.value == "SETTING_UP"

    wait_until(setting_up, timeout=60)


def _pretend_remote(team: Team, lease) -> None:
    from skyform.state.db import open_state

    with open_state(url=team.url) as db, db.transaction() as conn:
        conn.execute("UPDATE leases SET host='ci-runner' WHERE name=?", (lease.name,))
