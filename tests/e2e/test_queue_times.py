"""`queue` says when a detached job ended as its node recorded it, not when someone looked:
the time autostop counts idleness from, and the one a cost audit reads."""

from __future__ import annotations

import json
import time

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e

TASK = """\
resources: {infra: local}
run: echo ran
"""


def test_a_detached_job_ends_when_it_ended_not_when_queue_first_saw_it(sky, tmp_path):
    sky("launch", "-y", "-d", task_file(tmp_path, "quick.yaml", TASK), check=0)
    time.sleep(4)  # nobody looks while it ends
    looked = time.time()
    (job,) = json.loads(sky("queue", "quick", "--json", check=0).stdout)
    assert job["status"] == "SUCCEEDED"
    assert job["ended_at"] < looked - 3, (job, looked)
    assert job["ended_at"] >= job["started_at"]
    sky("down", "-y", "quick", check=0)
