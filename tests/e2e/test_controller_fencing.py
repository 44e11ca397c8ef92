"""`skyform controller run` killed with `kill -9` (the service alone, as an operator or the
OOM killer does it, not its process group) while a managed job runs on real sshd nodes,
with a real PostgreSQL store: its job controller goes with it, the other service adopts the
job only once that controller is gone, and the job succeeds once — one launch, one run, no
FAILED_CONTROLLER. Five times in a row (each time a fresh pair of services).

The two services have SKYFORM_HOMEs of their own on this machine, as two runners sharing the
team's database: neither sees the other's job directory, only the store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from e2ekit import adoptions, controller_service, task_file, team_env, wait_until, write_pool

from skyform.state.db import open_state
from skyform.state.managed import ManagedJobs

pytestmark = pytest.mark.e2e

PASSPHRASE = "team secret"
TASK = """\
name: once
resources: {{infra: ssh/lab}}
run: |
  echo "ran on $SKYFORM_NODE_RANK" >> {marker}
  sleep {seconds}
"""


def _home(path: Path, nodes) -> Path:
    path.mkdir(mode=0o700, exist_ok=True)
    write_pool(path, nodes, range(2))
    config = yaml.safe_load((path / "config.yaml").read_text())
    config["recovery"] = {"check_interval": 0.5, "lost_after": 2, "max_rounds": 3}
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    return path


def _run(home: Path, url: str, *args) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "skyform.cli.main", *map(str, args)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=home,
        env=team_env(home, url, PASSPHRASE),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _job(home: Path, url: str, job_id: int) -> dict:
    jobs = json.loads(_run(home, url, "jobs", "queue", "--json").stdout)
    return next(j for j in jobs if j["id"] == job_id)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"


def test_a_service_killed_with_kill_9_leaves_one_controller_and_the_job_runs_once(
    skyform_home, tmp_path, pg_url, fresh_ssh_nodes, shared_ckpt, monkeypatch
):
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    monkeypatch.setenv("SKYFORM_PASSPHRASE", PASSPHRASE)
    laptop = _home(skyform_home, fresh_ssh_nodes)
    runners = [_home(tmp_path / f"runner{i}", fresh_ssh_nodes) for i in range(2)]
    services: list[subprocess.Popen[str]] = []
    try:
        for job_id in range(1, 6):
            services = [controller_service(team_env(h, pg_url, PASSPHRASE)) for h in runners]
            with open_state() as db:
                wait_until(lambda db=db: len(db.list_leases("controller/")) == 2, 30)
            marker = shared_ckpt / f"runs-{job_id}"
            task = task_file(tmp_path, f"once{job_id}.yaml", TASK.format(marker=marker, seconds=6))
            _run(laptop, pg_url, "jobs", "launch", task, "-d")
            wait_until(lambda m=marker: m.exists(), 60)  # the job runs on its node
            (first,) = adoptions(job_id)
            victim = next(p for p in services if first.endswith(f":{p.pid}"))
            with open_state() as db:
                record = ManagedJobs(db).require(job_id)
            controller = record.controller_pid
            assert controller is not None and _alive(controller)
            os.kill(victim.pid, signal.SIGKILL)  # the service alone, not its group
            victim.wait()
            wait_until(lambda c=controller: not _alive(c), 10)  # its controller went with it
            done = wait_until(
                lambda j=job_id: (
                    (r := _job(laptop, pg_url, j))["status"]
                    in ("SUCCEEDED", "FAILED", "FAILED_CONTROLLER", "CANCELLED")
                    and r
                ),
                90,
            )
            assert done["status"] == "SUCCEEDED", (job_id, done)
            assert marker.read_text() == "ran on 0\n", job_id  # the work ran once
            adopted = adoptions(job_id)
            survivor = next(p for p in services if p is not victim)
            assert len(adopted) == 2 and adopted[1].endswith(f":{survivor.pid}"), adopted
            with open_state() as db:
                launches = [
                    e
                    for e in db.events()
                    if e.kind == "managed.provisioned" and e.data.get("managed_job_id") == job_id
                ]
                assert len(launches) == 1, (job_id, [e.message for e in launches])
            for proc in services:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=30)
    finally:
        for proc in services:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


def test_a_frozen_service_s_controller_is_fenced_when_it_wakes_and_the_job_runs_once(
    skyform_home, tmp_path, pg_url, fresh_ssh_nodes, shared_ckpt, monkeypatch
):
    """A runner frozen past its lease (a suspended VM: the service and its controller, alive
    but silent): the other service adopts the job once the lease ran out; when the frozen
    controller wakes, its lease has a newer token, so it stops without a write."""
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    monkeypatch.setenv("SKYFORM_PASSPHRASE", PASSPHRASE)
    laptop = _home(skyform_home, fresh_ssh_nodes)
    runners = [_home(tmp_path / f"runner{i}", fresh_ssh_nodes) for i in range(2)]
    services = [controller_service(team_env(h, pg_url, PASSPHRASE)) for h in runners]
    try:
        with open_state() as db:
            wait_until(lambda: len(db.list_leases("controller/")) == 2, 30)
        marker = shared_ckpt / "runs"
        task = task_file(tmp_path, "once.yaml", TASK.format(marker=marker, seconds=12))
        _run(laptop, pg_url, "jobs", "launch", task, "-d")
        wait_until(marker.exists, 60)
        wait_until(lambda: _job(laptop, pg_url, 1)["status"] == "RUNNING", 30)
        time.sleep(1)  # its controller watches the job now (a frozen transaction would
        # hold the store's write lock until the server drops it: a test of another thing)
        (first,) = adoptions(1)
        frozen = next(p for p in services if first.endswith(f":{p.pid}"))
        with open_state() as db:
            controller = ManagedJobs(db).require(1).controller_pid
        assert controller is not None
        os.killpg(frozen.pid, signal.SIGSTOP)
        try:
            wait_until(lambda: len(adoptions(1)) == 2, 30)  # once its 3 s lease ran out
        finally:
            os.killpg(frozen.pid, signal.SIGCONT)
        wait_until(lambda: not _alive(controller), 30)  # it woke, found itself fenced, left
        home = runners[services.index(frozen)]
        log = (home / "jobs" / "1" / "controller.log").read_text()
        assert "managed/1 was taken by another holder" in log, log[-2000:]
        done = wait_until(
            lambda: (
                (r := _job(laptop, pg_url, 1))["status"]
                in ("SUCCEEDED", "FAILED", "FAILED_CONTROLLER")
                and r
            ),
            90,
        )
        assert done["status"] == "SUCCEEDED", done
        assert marker.read_text() == "ran on 0\n"
        with open_state() as db:
            launches = [e for e in db.events() if e.kind == "managed.provisioned"]
        assert len(launches) == 1, [e.message for e in launches]
    finally:
        for proc in services:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGCONT)
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
