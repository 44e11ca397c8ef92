"""A bucket `plan` cannot read (no network, no credentials where it runs) is not a new bucket:
SkyPilot's gpt2-train example (`name: $BUCKET_NAME`, `mode: COPY`) plans, the plan says the
bucket was not read, and apply reads it before any cluster is made."""

from __future__ import annotations

import json
import socket

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e

GPT2_LIKE = (
    "name: gpt2\nresources: {infra: local}\nenvs:\n  BUCKET_NAME: gpt2-data\n"
    "file_mounts:\n  ~/cache:\n    name: $BUCKET_NAME\n    mode: COPY\n"
    "run: cat ~/cache/shard.txt\n"
)


def _unreachable() -> str:
    """A loopback port nothing listens on: the store's connection is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _plan_offline(sky, monkeypatch, endpoint: str, task) -> str:
    monkeypatch.setenv("AWS_ENDPOINT_URL", _unreachable())
    try:
        return sky("plan", task, "-o", "gpt2.json", check=0).stdout
    finally:
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)


def test_a_bucket_unread_at_plan_time_is_read_at_apply(
    sky, s3, moto_endpoint, monkeypatch, tmp_path
):
    s3.create_bucket(Bucket="gpt2-data")
    s3.put_object(Bucket="gpt2-data", Key="shard.txt", Body=b"tokens\n")
    task = task_file(tmp_path, "gpt2.yaml", GPT2_LIKE)
    text = _plan_offline(sky, monkeypatch, moto_endpoint, task)
    assert 'bucket "gpt2-data" (s3, not read at plan time' in text
    assert "apply reads it, and stops before any cluster if it does not exist" in text
    (bucket,) = json.loads((tmp_path / "gpt2.json").read_text())["buckets"]
    assert (bucket["action"], bucket["created_by_skyform"]) == ("noop", False)

    applied = sky("apply", "gpt2.json", timeout=300, check=0)
    assert "s3://gpt2-data: read now: it exists" in applied.stdout
    assert "node=0) tokens" in applied.stdout
    sky("down", "-y", "gpt2", check=0)
    assert s3.get_object(Bucket="gpt2-data", Key="shard.txt")["Body"].read() == b"tokens\n"


def test_an_unread_bucket_missing_at_apply_stops_it_before_any_cluster(
    sky, s3, moto_endpoint, monkeypatch, tmp_path
):
    task = task_file(tmp_path, "gpt2.yaml", GPT2_LIKE)
    _plan_offline(sky, monkeypatch, moto_endpoint, task)
    failed = sky("apply", "gpt2.json", timeout=120, check=1)
    assert (
        "bucket s3://gpt2-data does not exist (COPY of the new, empty bucket s3://gpt2-data "
        "would copy nothing)" in failed.stderr
    )
    assert json.loads(sky("status", "--json", check=0).stdout) == []
    assert s3.list_buckets()["Buckets"] == []  # nothing was created
