"""Helpers for end-to-end tests (importable as `e2ekit`)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml

FINAL = (
    "SUCCEEDED",
    "CANCELLED",
    "FAILED",
    "FAILED_SETUP",
    "FAILED_NO_RESOURCE",
    "FAILED_PRECHECKS",
    "FAILED_CONTROLLER",
)


def write_pool(home: Path, nodes, indexes, *, name: str = "lab", labels=None) -> None:
    """config.yaml with an ssh pool of the given session nodes (labels per index)."""
    hosts = []
    for i in indexes:
        h = nodes.handle(i)
        entry = {
            "host": h.host,
            "port": h.port,
            "user": h.user,
            "identity_file": h.identity_file,
            "cpus": 2,
            "memory": 4,
        }
        if labels and i in labels:
            entry["labels"] = labels[i]
        hosts.append(entry)
    config = {"ssh_pools": {name: {"hosts": hosts}}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def task_file(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def two_region_pool(
    home: Path,
    nodes,
    *,
    hosts=(0, 1, 2, 3),
    give_up_after: float | None = None,
    max_rounds: int | None = 5,
    check_interval: float = 1,
    lost_after: int = 2,
) -> None:
    """config.yaml with pool `lab`: hosts 0-1 in region east (zone east-a, $0.10/h), 2-3 in
    west (west-a, $0.20/h), all spot; fast recovery settings for tests and benchmarks
    (a setting passed as None is left out of the file)."""
    entries = []
    for i in hosts:
        h, east = nodes.handle(i), i < 2
        entries.append(
            {
                "host": h.host,
                "port": h.port,
                "user": h.user,
                "identity_file": h.identity_file,
                "cpus": 2,
                "memory": 4,
                "hourly_price": 0.1 if east else 0.2,
                "labels": {
                    "region": "east" if east else "west",
                    "zone": "east-a" if east else "west-a",
                    "spot": True,
                },
            }
        )
    config = {
        "ssh_pools": {"lab": {"hosts": entries}},
        "recovery": {
            key: value
            for key, value in {
                "check_interval": check_interval,
                "lost_after": lost_after,
                "give_up_after": give_up_after,
                "max_rounds": max_rounds,
            }.items()
            if value is not None
        },
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def managed_job(sky, job_id: int = 1) -> dict | None:
    """The managed job as `skyform jobs queue --json` shows it (None before it exists)."""
    jobs = json.loads(sky("jobs", "queue", "--json", check=0).stdout)
    return next((j for j in jobs if j["id"] == job_id), None)


def wait_for_job(sky, predicate, timeout: float = 90.0, job_id: int = 1) -> dict:
    deadline = time.monotonic() + timeout
    job = None
    while time.monotonic() < deadline:
        job = managed_job(sky, job_id)
        if job is not None and predicate(job):
            return job
        time.sleep(0.3)
    raise AssertionError(f"managed job never got there: {job}")


def wait_until(predicate, timeout: float = 30.0):
    """What `predicate` returns once it is truthy (polled every 0.2 s), or fail at `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError("timed out")


def job_ended(job: dict) -> bool:
    return job["status"] in FINAL


def team_env(home: Path, url: str, passphrase: str) -> dict[str, str]:
    """A teammate's (or a runner's) environment: its SKYFORM_HOME, the team's store and
    passphrase, a 3 s lease so a dead holder's lease runs out quickly."""
    import os

    return dict(
        os.environ,
        SKYFORM_HOME=str(home),
        SKYFORM_STATE_URL=url,
        SKYFORM_PASSPHRASE=passphrase,
        SKYFORM_LEASE_TTL="3",
        COLUMNS="200",
        NO_COLOR="1",
    )


def controller_service(env: dict[str, str]):
    """`skyform controller run` in a process group of its own (the service and the job
    controllers it starts), polling every 0.5 s."""
    import subprocess
    import sys

    return subprocess.Popen(
        [sys.executable, "-m", "skyform.cli.main", "controller", "run", "--poll", "0.5"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def adoptions(job_id: int) -> list[str]:
    """The services (controller/user@host:pid) that adopted the managed job, in order."""
    from skyform.state.db import open_state

    with open_state() as db:
        return [
            e.data["controller"]
            for e in db.events()
            if e.kind == "managed.adopted" and e.data.get("managed_job_id") == job_id
        ]
