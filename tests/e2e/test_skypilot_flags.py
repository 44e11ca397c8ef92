"""Flags SkyPilot users type (issue 28, "Verbs"): `queue -a -s -u`, `status -u --ip
--endpoints --endpoint PORT`, and `launch -c dev [--gpus A100]` with no task file (a dev box)."""

from __future__ import annotations

import json

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e


def _local(tmp_path, name: str, extra: str = "", run: str = "echo hi"):
    return task_file(
        tmp_path, f"{name}.yaml", f"name: {name}\nresources: {{infra: local{extra}}}\nrun: {run}\n"
    )


def test_queue_skip_finished_and_all_users(sky, tmp_path):
    sky("launch", _local(tmp_path, "c"), "-y", check=0)  # job 1 ends
    sky("exec", "c", "-d", "sleep 30", check=0)  # job 2 runs
    every = sky("queue", "c", "-a", "-u", check=0).stdout  # SkyPilot's spellings, accepted
    assert "SUCCEEDED" in every and "RUNNING" in every
    running = json.loads(sky("queue", "c", "-s", "--json", check=0).stdout)
    assert [(j["job_id"], j["status"]) for j in running] == [(2, "RUNNING")]
    assert "SUCCEEDED" not in sky("queue", "--skip-finished", check=0).stdout
    sky("cancel", "c", "2", check=0)
    assert "No jobs on cluster c." in sky("queue", "c", "-s", check=0).stdout


def test_status_ip_and_endpoints_of_one_cluster(sky, tmp_path):
    sky("launch", _local(tmp_path, "web", ", ports: [8080, 9000-9001]"), "-y", check=0)
    assert "web" in sky("status", "-u", check=0).stdout
    # an IP address, as SkyPilot prints it, and the one every endpoint starts with
    assert sky("status", "--ip", "web", check=0).stdout == "127.0.0.1\n"
    assert sky("status", "--ip", check=0).stdout == "127.0.0.1\n"  # the only cluster
    listed = sky("status", "--endpoints", "web", check=0).stdout.splitlines()
    assert listed == ["8080: 127.0.0.1:8080", "9000: 127.0.0.1:9000", "9001: 127.0.0.1:9001"]
    one = sky("status", "web", "--endpoint", "9001", check=0)
    assert one.stdout == "127.0.0.1:9001\n"  # one plain line, to script with
    closed = sky("status", "web", "--endpoint", "22")
    assert closed.exit_code == 1 and "does not open port 22 (it opens: 8080, 9000, 9001)" in (
        closed.stderr
    )
    sky("launch", _local(tmp_path, "other"), "-y", check=0)
    several = sky("status", "--ip")
    assert several.exit_code == 1 and "2 clusters found" in several.stderr
    assert "skyform status --ip CLUSTER" in several.stderr
    none = sky("status", "--endpoints", "other")
    assert none.exit_code == 1 and "opens no ports" in none.stderr


def test_launch_with_no_task_file_makes_a_dev_box(sky, skyform_home, tmp_path, monkeypatch):
    # launch places only where `check` finds credentials: GCP's are found (never used)
    (tmp_path / "adc.json").write_text('{"type": "authorized_user"}')
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "adc.json"))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "demo")
    planned = sky("launch", "-c", "dev", "--gpus", "A100", "--dryrun", check=0).stdout
    assert 'cluster "dev" will be created' in planned and "A100:1" in planned
    sky("launch", "-c", "dev", "--infra", "local", "-y", check=0)
    (record,) = json.loads(sky("status", "--json", check=0).stdout)
    assert (record["name"], record["status"]) == ("dev", "UP")
    assert sky("exec", "dev", "echo on-the-box", check=0).stdout.count("on-the-box") == 1
    again = sky("launch", "-c", "dev", "--infra", "local", "-y", check=0).stdout
    assert "0 added, 0 changed, 0 destroyed" in again  # the same dev box: nothing to change
    task = skyform_home / "devboxes" / "dev.yaml"
    assert task.stat().st_mode & 0o777 == 0o600
    unnamed = sky("launch", "--gpus", "A100")
    assert unnamed.exit_code == 1 and "skyform launch -c dev --gpus A100" in unnamed.stderr


def test_status_ip_on_a_fresh_machine_makes_no_state(sky, skyform_home):
    fresh = sky("status", "--ip")
    assert fresh.exit_code == 1 and "No cluster found" in fresh.stderr
    assert not (skyform_home / "state.db").exists()
