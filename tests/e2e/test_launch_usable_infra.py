"""`launch` and `jobs launch` of a task file place only on infra `skyform check` finds usable
on this machine, as `sky launch` plans on the clouds `sky check` enabled; what was skipped is
named with check's reason. Before, the README's examples/pipeline.yaml was placed on GCP on a
machine with no cloud credentials and its managed job retried for up to 24 h."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e

TASK = "name: prep\nresources: {cpus: 2+}\nrun: echo hi\n"
CREDENTIALS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_PROFILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "CLOUDSDK_CORE_PROJECT",
)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_cloud_credentials(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in CREDENTIALS:
        monkeypatch.delenv(name, raising=False)


def _skipped_both(stderr: str) -> None:
    assert "Not placed on: cloud=aws (not usable here: no credentials found" in stderr
    assert "cloud=gcp (not usable here: no credentials found" in stderr
    assert "skyform check" in stderr


def test_jobs_launch_of_the_readme_pipeline_is_refused_at_once_naming_why(sky, tmp_path):
    pipeline = shutil.copy(REPO / "examples" / "pipeline.yaml", tmp_path / "pipeline.yaml")
    result = sky("jobs", "launch", "-y", "-d", pipeline)
    assert result.exit_code == 4, result.output
    _skipped_both(result.stderr)
    assert json.loads(sky("jobs", "queue", "--json", check=0).stdout) == []  # no job left


def test_launch_is_refused_when_no_usable_infra_fits(sky, tmp_path):
    result = sky("launch", "-y", task_file(tmp_path, "prep.yaml", TASK))
    assert result.exit_code == 4, result.output
    _skipped_both(result.stderr)
    assert json.loads(sky("status", "--json", check=0).stdout) == []


def test_launch_places_on_the_usable_cloud_and_names_the_skipped_one(sky, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-one")
    shown = sky("launch", "--dryrun", task_file(tmp_path, "prep.yaml", TASK), check=0).stdout
    assert '+ cluster "prep"' in shown
    assert "aws/" in shown and "gcp/" not in shown
    assert "- cloud=gcp (not usable here: no credentials found; see `skyform check`)" in shown
    # `plan` is for review anywhere (CI, a laptop without credentials): it places as before
    planned = sky("plan", task_file(tmp_path, "prep.yaml", TASK), check=0).stdout
    assert "not usable here" not in planned
