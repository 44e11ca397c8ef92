"""`skyform storage ls|delete` on the buckets skyform created (against moto on loopback)."""

from __future__ import annotations

import json

import pytest
from e2ekit import task_file
from motoserver import make_bucket

pytestmark = pytest.mark.e2e


def test_ls_then_delete_only_what_skyform_made_and_no_live_cluster_uses(sky, s3, tmp_path):
    make_bucket(s3, "theirs", "eu-west-1")
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "a.txt").write_text("a")
    task = task_file(
        tmp_path,
        "t.yaml",
        "name: owner\nresources: {infra: local}\nfile_mounts:\n"
        "  ~/d: {name: mine-b, source: ./ds, mode: COPY}\n  ~/e: s3://theirs\nrun: ls ~/d\n",
    )
    assert sky("storage", "ls", check=0).stdout.strip() == "No existing storage."
    sky("apply", task, "-y", timeout=300, check=0)
    (row,) = json.loads(sky("storage", "ls", "--json", "--size", check=0).stdout)
    assert row == {
        "name": "mine-b",
        "store": "s3",
        "region": "us-east-1",
        "persistent": True,
        "created_by_skyform": True,
        "used_by": ["owner"],
        "size_gb": 1e-09,
    }
    assert "mine-b" in sky("storage", "ls", check=0).stdout
    refused = sky("storage", "delete", "mine-b", "-y")
    assert refused.exit_code == 1 and "bucket mine-b is used by owner" in refused.stderr
    unknown = sky("storage", "delete", "theirs", "-y")
    assert unknown.exit_code == 1 and "never deletes a bucket it did not create" in unknown.stderr
    sky("down", "-y", "owner", check=0)
    assert "mine-b" in [b["Name"] for b in s3.list_buckets()["Buckets"]]  # persistent: kept
    unconfirmed = sky("storage", "delete", "mine-*")
    assert unconfirmed.exit_code == 1
    deleted = sky("storage", "delete", "mine-*", "-y", check=0)
    assert "bucket s3://mine-b deleted" in deleted.stdout
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["theirs"]
    assert json.loads(sky("storage", "ls", "--json", check=0).stdout) == []
