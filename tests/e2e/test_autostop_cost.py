"""cost-report bills an autostopped cluster until its node stopped, not until someone next
runs `status` (SkyPilot's cost-report ends a cluster's duration at its autostop)."""

from __future__ import annotations

import json
import time

import pytest
from autostopkit import last_job_end
from e2ekit import task_file

pytestmark = pytest.mark.e2e

TASK = "resources:\n  infra: local\n  autostop: {idle_minutes: 1, down: true}\nrun: echo ran\n"


@pytest.fixture(autouse=True)
def _nothing_left(sky):
    yield
    sky("down", "-a", "-y")


def test_an_autostopped_cluster_is_billed_until_the_node_stopped(sky, skyform_home, tmp_path):
    (skyform_home / "config.yaml").write_text("autostop: {check_interval: 2}\n")
    sky("launch", "-y", task_file(tmp_path, "idle.yaml", TASK), check=0)
    ended = last_job_end(sky, "idle")
    time.sleep(max(0.0, ended + 60 + 35 - time.time()))  # the agent acted ~30 s ago
    asked_at = time.time()
    report = json.loads(sky("cost-report", "--json", check=0).stdout)
    (row,) = [r for r in report["clusters"] if r["name"] == "idle"]
    (interval,) = row["intervals"]
    assert interval["ended_at"] is not None  # settled without a `status` first
    # the node's agent stopped it about 60 s after the job (checks every 2 s), not when asked
    assert ended + 55 < interval["ended_at"] < ended + 60 + 15 < asked_at - 15
    assert "idle" not in sky("status", check=0).stdout
