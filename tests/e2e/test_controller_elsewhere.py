"""A managed job launched from one machine is run and recovered by a controller service on
another: two SKYFORM_HOMEs ("laptop" and "runner") share one PostgreSQL store. The laptop
launches (no local controller: the runner's service is registered); its copy of the job's
files is gone at once, as if it were another machine. The runner's service opens the job's
sealed task and inputs from the store (SKYFORM_PASSPHRASE), runs it on `local` infra, re-plans
it after a preemption, and the laptop reads the runner's revision from the store. Once the job
is over the stored secret values are dropped."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from e2ekit import controller_service, task_file, team_env, wait_until

from skyform.state.db import open_state
from skyform.state.managed import ManagedJobs
from skyform.state.sqlcore import whoami
from skyform.state.teamkeys import unseal

pytestmark = pytest.mark.e2e

PASSPHRASE = "correct horse battery staple"
FINAL = ("SUCCEEDED", "FAILED", "FAILED_CONTROLLER", "CANCELLED")
TASK = """\
name: ticks
resources: {{infra: local}}
secrets: {{TOKEN: null}}
run: |
  echo "attempt $SKYFORM_RECOVERY_COUNT token=$TOKEN" >> {marker}
  for i in $(seq 1 {n}); do echo "tick $i"; sleep 0.2; done
"""


def _home(path: Path) -> Path:
    path.mkdir(mode=0o700, exist_ok=True)
    settings = {"check_interval": 0.5, "lost_after": 2, "max_rounds": 5}
    (path / "config.yaml").write_text(yaml.safe_dump({"recovery": settings}))
    return path


def _run(home: Path, url: str, *args, check: int | None = 0, extra: dict | None = None):
    proc = subprocess.run(
        [sys.executable, "-m", "skyform.cli.main", *map(str, args)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=home,
        env={**team_env(home, url, PASSPHRASE), **(extra or {})},
        timeout=120,
    )
    if check is not None:
        assert proc.returncode == check, proc.stdout + proc.stderr
    return proc


def _follower(home: Path, url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "skyform.cli.main", "jobs", "logs", "1", "-f"],
        env=team_env(home, url, PASSPHRASE),
        cwd=home,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _job(home: Path, url: str) -> dict:
    return json.loads(_run(home, url, "jobs", "queue", "--json").stdout)[0]


def test_a_job_launched_on_one_machine_is_run_and_recovered_by_another_s_controller(
    skyform_home, tmp_path, pg_url, monkeypatch
):
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    monkeypatch.setenv("SKYFORM_PASSPHRASE", PASSPHRASE)
    laptop, runner = _home(skyform_home), _home(tmp_path / "runner")
    marker = tmp_path / "attempts"
    service = controller_service(team_env(runner, pg_url, PASSPHRASE))
    follower = None
    try:
        with open_state() as db:
            wait_until(lambda: db.list_leases("controller/"))
        task = task_file(tmp_path, "ticks.yaml", TASK.format(marker=marker, n=50))
        launched = _run(laptop, pg_url, "jobs", "launch", task, "-d", "--secret", "TOKEN=s3cret")
        assert f"Submitted: controller {whoami()}:{service.pid} will run it." in launched.stderr
        assert "SKYFORM_PASSPHRASE is not set" not in launched.stderr
        shutil.rmtree(laptop / "jobs" / "1")  # the laptop's copy: not on the runner's machine

        running = wait_until(lambda: (j := _job(laptop, pg_url))["status"] == "RUNNING" and j, 60)
        assert running["controller"] == f"{whoami()}:{service.pid}"
        follower = _follower(laptop, pg_url)  # `jobs logs 1 -f` on the laptop, as it runs
        wait_until(lambda: marker.exists() and "attempt 0" in marker.read_text(), 60)
        time.sleep(1.0)
        _run(runner, pg_url, "debug", "preempt", "j1-ticks")
        done = wait_until(
            lambda: (j := _job(laptop, pg_url))["status"] in ("SUCCEEDED", "FAILED") and j, 120
        )
        assert done["status"] == "SUCCEEDED", done
        assert marker.read_text().splitlines() == [
            "attempt 0 token=s3cret",
            "attempt 1 token=s3cret",
        ]

        revisions = json.loads(_run(laptop, pg_url, "jobs", "plans", "1", "--json").stdout)
        assert [r["revision"] for r in revisions] == [1, 2]
        assert str(runner) in revisions[1]["path"]  # planned by the runner's controller
        followed, _ = follower.communicate(timeout=60)
        assert follower.returncode == 0, followed
        lines = followed.splitlines()
        assert lines[-2:] == [
            "(ticks, node=0) tick 50",
            "── managed job 1: SUCCEEDED (every task succeeded)",
        ]
        assert any(x.startswith("── managed job 1: RECOVERING") for x in lines)  # as it came
        attempts = [i for i, line in enumerate(lines) if "task ticks, attempt" in line]
        assert len(attempts) == 2  # the preempted attempt's output, then the recovery's
        assert lines[attempts[0] + 1] == lines[attempts[1] + 1] == "(ticks, node=0) tick 1"
        _assert_logs_from_the_store(laptop, runner, pg_url, f"{whoami()}:{service.pid}")
        for number in (1, 2):  # revision 1's file went with the laptop's copy: from the store
            shown = _run(laptop, pg_url, "jobs", "plans", "1", "--show", number, "--json")
            assert [c["cluster"] for c in json.loads(shown.stdout)["changes"]] == ["j1-ticks"]
        assert (runner / "jobs" / "1" / "task.yaml").read_bytes() == task.read_bytes()

        with open_state() as db:
            found = ManagedJobs(db).get_inputs(1)
        assert found is not None
        _, token = found
        stored = json.loads(unseal(PASSPHRASE, token, what="inputs"))
        assert stored["secrets"] == ["TOKEN="]  # the job is over: its secret value is gone
    finally:
        if follower is not None and follower.poll() is None:
            follower.kill()
            follower.wait(timeout=30)
        if service.poll() is None:
            os.killpg(service.pid, signal.SIGTERM)
            service.wait(timeout=30)


def _assert_logs_from_the_store(laptop: Path, runner: Path, url: str, controller: str) -> None:
    """The laptop has no copy of the output: `jobs logs` reads the runner's from the store,
    every attempt (the preempted one too), the final status last; the same as the runner's."""
    assert not list((laptop / "jobs" / "1" / "logs").glob("*.log"))
    here = _run(laptop, url, "jobs", "logs", "1", "--no-follow").stdout.splitlines()
    there = _run(runner, url, "jobs", "logs", "1", "--no-follow").stdout.splitlines()
    assert here == there
    attempts = [i for i, line in enumerate(here) if "task ticks, attempt" in line]
    assert [here[i].split("(")[0] for i in attempts] == [
        "── task ticks, attempt 1 ",
        "── task ticks, attempt 2 ",
    ]
    before = here[attempts[0] + 1 : attempts[1]]  # the attempt the preemption ended
    assert before and before[0] == "(ticks, node=0) tick 1"
    assert "(ticks, node=0) tick 50" not in before
    assert here[attempts[1] + 1 :][-2:] == [
        "(ticks, node=0) tick 50",
        "── managed job 1: SUCCEEDED (every task succeeded)",
    ]
    followed = _run(laptop, url, "jobs", "logs", "1", "-f")
    assert followed.stdout.splitlines() == here
    with open_state() as db:  # sealed at rest: what the job printed is not in the rows
        rows = db.execute("SELECT sealed FROM managed_logs WHERE job_id=1").fetchall()
    assert rows and all(b"tick" not in base64.b64decode(r["sealed"].split(":")[-1]) for r in rows)
    env_without = {"SKYFORM_PASSPHRASE": ""}
    blind = _run(laptop, url, "jobs", "logs", "1", "--no-follow", extra=env_without).stdout
    assert "tick" not in blind
    assert f"was run by controller {controller}" in blind
    assert "Set SKYFORM_PASSPHRASE to the team's passphrase to read its output" in blind


def test_a_service_elsewhere_never_adopts_a_job_a_local_controller_drives(
    skyform_home, tmp_path, pg_url, monkeypatch
):
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    laptop, runner = _home(skyform_home), _home(tmp_path / "runner")
    marker = tmp_path / "attempts"
    task = task_file(tmp_path, "ticks.yaml", TASK.format(marker=marker, n=30))
    launched = _run(laptop, pg_url, "jobs", "launch", task, "-d", "--secret", "TOKEN=t")
    assert "No controller is registered: started one on this machine." in launched.stderr
    running = wait_until(lambda: (j := _job(laptop, pg_url))["status"] == "RUNNING" and j, 60)
    local = running["controller"]  # the laptop's own controller holds the job's lease
    assert local is not None
    service = controller_service(team_env(runner, pg_url, PASSPHRASE))
    try:
        done = wait_until(lambda: (j := _job(laptop, pg_url))["status"] in FINAL and j, 90)
        assert done["status"] == "SUCCEEDED", done
        assert marker.read_text().splitlines() == ["attempt 0 token=t"]  # run once, here
        with open_state() as db:
            adopted = [e for e in db.events() if e.kind == "managed.adopted"]
        assert adopted == []
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        service.wait(timeout=30)
