"""A managed job on an AWS spot instance through the real Pulumi engine: the controller
provisions with the real CLI and the test provider, the instance is reclaimed out of band
(gone from EC2, its machine halted), the controller notices, re-plans, destroys the broken
stack and makes a new one, and the job resumes from its checkpoint; at the end the cloud
holds nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine

FINAL = ("SUCCEEDED", "FAILED", "FAILED_SETUP", "FAILED_NO_RESOURCE", "FAILED_CONTROLLER")

COUNTER = """\
name: counter
resources: {{infra: aws/us-east-1, instance_type: m7a.large, use_spot: true}}
skyform:
  checkpoint_dir: {ckpt}
run: |
  umask 000  # the machines' user writes the shared checkpoint
  start=$(cat "$SKYFORM_CHECKPOINT_DIR/n" 2>/dev/null || echo 0)
  echo "recovery=$SKYFORM_RECOVERY_COUNT start=$start on $(hostname)"
  for i in $(seq "$start" 24); do echo "$i" > "$SKYFORM_CHECKPOINT_DIR/n"; sleep 0.5; done
"""


@pytest.fixture
def checkpoints():
    """A directory the machines see as it is (their /tmp is their own) and may write."""
    path = Path(tempfile.mkdtemp(prefix="skyform-ckpt-", dir="/var/tmp"))
    os.chmod(path, 0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _step(checkpoints: Path) -> int:
    try:
        return int((checkpoints / "n").read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def _job(sky) -> dict:
    (job,) = json.loads(sky("jobs", "queue", "--json").stdout)
    return job


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_reclaimed_spot_instance_is_recovered_and_the_job_resumes(
    sky, test_cloud, tmp_path, checkpoints
):
    (tmp_path / "counter.yaml").write_text(COUNTER.format(ckpt=checkpoints))
    sky("jobs", "launch", "counter.yaml", "-d", "-y")
    _wait(lambda: _job(sky)["status"] == "RUNNING" and _step(checkpoints) >= 3, 90, "a step")
    (first,) = test_cloud.cloud.resources("aws:ec2/instance:Instance")

    test_cloud.terminate("aws:ec2/instance:Instance", "node-0")  # the spot reclaim
    job = _wait(lambda: (j := _job(sky))["status"] in FINAL and j, 240, "the job's end")
    controller = sky("jobs", "logs", "1", "--no-follow", "--controller").stdout
    assert job["status"] == "SUCCEEDED", controller
    assert job["tasks"][0]["recovery_count"] == 1
    assert "node 0 stopped answering" in controller
    logs = sky("jobs", "logs", "1", "--no-follow").stdout
    (resumed,) = re.findall(r"recovery=1 start=(\d+) on ip-", logs)
    assert int(resumed) >= 3  # from the checkpoint, not from the start
    # The broken stack was destroyed and a new instance made by the real engine.
    made = [c for c in test_cloud.cloud.calls("Create") if not c["preview"]]
    assert [c["urn"].rsplit("::", 1)[-1] for c in made].count("node-0") == 2
    assert first["id"] not in {r["id"] for r in test_cloud.cloud.resources()}
    # The controller takes the cluster down once the job is done: nothing is left.
    _wait(lambda: test_cloud.cloud.resources() == [], 30, "the cluster's teardown")
    assert test_cloud.host.machines == {}
