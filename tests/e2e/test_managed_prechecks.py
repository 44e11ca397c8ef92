"""A managed job whose launch fails for a reason waiting does not cure (credentials, a
project, an SDK, a quota) fails at once, as SkyPilot's FAILED_PRECHECKS: the reason in
`jobs queue` and `jobs logs`, one round of plan revisions, no INIT cluster left behind.
Before, the README's examples/pipeline.yaml retried for up to 24 h, writing a revision a round."""

from __future__ import annotations

import json
import time

import pytest
import yaml
from e2ekit import task_file, wait_for_job

pytestmark = pytest.mark.e2e

# GCP "usable" by `check` (credentials found) but no project: the engine refuses before
# anything is made, as it does on a laptop where gcloud was never given one
GCP_TASK = "name: prep\nresources: {infra: gcp, cpus: 2+}\nrun: echo never\n"


@pytest.fixture
def gcp_without_project(skyform_home, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    adc = home / "adc.json"
    adc.write_text('{"type": "authorized_user"}')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    for name in ("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    # the default would retry for 24 h: a regression then times this test out
    settings = {"check_interval": 0.5, "give_up_after": 86400, "max_rounds": None}
    (skyform_home / "config.yaml").write_text(yaml.safe_dump({"recovery": settings}))


@pytest.mark.usefixtures("gcp_without_project")
def test_a_launch_refused_for_want_of_a_project_fails_at_once_with_the_reason(sky, tmp_path):
    started = time.monotonic()
    sky("jobs", "launch", "-d", task_file(tmp_path, "prep.yaml", GCP_TASK), check=0)
    job = wait_for_job(sky, lambda j: j["status"] not in ("PENDING", "STARTING", "RECOVERING"))
    assert time.monotonic() - started < 60
    assert job["status"] == "FAILED_PRECHECKS"
    assert "no GCP project is configured on this machine" in job["reason"]
    queue = sky("jobs", "queue", check=0).stdout
    assert "FAILED_PRECHECKS" in queue
    logs = sky("jobs", "logs", "1", "--no-follow").stdout
    assert "no GCP project is configured" in logs
    assert logs.strip().splitlines()[-1].startswith("── managed job 1: FAILED_PRECHECKS (")
    revisions = json.loads(sky("jobs", "plans", "1", "--json", check=0).stdout)
    assert len(revisions) <= 3  # the launch and one round of relaunch steps, not one a round
    status = json.loads(sky("status", "--json", check=0).stdout)
    assert status == [] or status.get("clusters") == []  # no INIT cluster to `down --purge`
