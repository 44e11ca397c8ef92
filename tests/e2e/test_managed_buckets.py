"""A managed job's bucket with a local source: made and uploaded at `jobs launch`, from the
user's machine (as `apply` does before any cluster, and as SkyPilot's `jobs launch` uploads
local sources before the controller takes the job), so its nodes read the data."""

from __future__ import annotations

import pytest
from e2ekit import job_ended, task_file, wait_for_job

pytestmark = pytest.mark.e2e


def test_a_managed_jobs_bucket_is_made_and_uploaded_at_launch(sky, s3, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "input.txt").write_text("hello from the laptop\n")
    task = task_file(
        tmp_path,
        "job.yaml",
        "name: reader\nresources: {infra: local}\nfile_mounts:\n"
        "  ~/data:\n    name: managed-input\n    source: ./data\n    mode: COPY\n"
        "run: cat ~/data/input.txt\n",
    )
    sky("jobs", "launch", task, "-y", "-d", timeout=300, check=0)
    assert s3.get_object(Bucket="managed-input", Key="input.txt")["Body"].read() == (
        b"hello from the laptop\n"
    )
    job = wait_for_job(sky, job_ended, timeout=180)
    logs = sky("jobs", "logs", str(job["id"]), "--no-follow", check=0).stdout
    assert job["status"] == "SUCCEEDED", logs
    assert "hello from the laptop" in logs
