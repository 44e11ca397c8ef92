"""A real S3 API on loopback: moto's server mode, one per test session.

Tests reach it the standard way (AWS_ENDPOINT_URL + dummy keys), which boto3, the AWS CLI and
rclone all honour; every test starts from an empty store (moto's reset API).
"""

from __future__ import annotations

import os
import shutil
import urllib.request

import pytest
from loopback import serve_tool

KEYS = {"AWS_ACCESS_KEY_ID": "testing-key-id", "AWS_SECRET_ACCESS_KEY": "testing-secret-key"}


@pytest.fixture(scope="session")
def moto_endpoint(tmp_path_factory):
    args = lambda port: ["-H", "127.0.0.1", "-p", str(port)]  # noqa: E731
    yield from serve_tool(
        tmp_path_factory, "moto_server", "pip install 'moto[server]'", args, "/moto-api/"
    )


@pytest.fixture
def s3(moto_endpoint, monkeypatch):
    """A boto3 S3 client on an empty moto; the environment points skyform (and the CLI
    subprocesses, which inherit it) at the same store."""
    import boto3

    request = urllib.request.Request(moto_endpoint + "/moto-api/reset", method="POST")
    urllib.request.urlopen(request, timeout=10)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)  # plain http on loopback
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        region_name="us-east-1",
        aws_access_key_id=KEYS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=KEYS["AWS_SECRET_ACCESS_KEY"],
    )


def make_bucket(s3, name: str, region: str = "us-east-1") -> None:
    args = {"Bucket": name}
    if region != "us-east-1":
        args["CreateBucketConfiguration"] = {"LocationConstraint": region}
    s3.create_bucket(**args)


def keys_of(s3, bucket: str, prefix: str = "") -> list[str]:
    paginator = s3.get_paginator("list_objects_v2")
    return sorted(
        o["Key"]
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix)
        for o in page.get("Contents", [])
    )


def can_fuse() -> str | None:
    """Why FUSE mounts cannot work here, or None when they can."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if not (shutil.which("fusermount3") or shutil.which("fusermount")):
        return "no fusermount3"
    if not shutil.which("rclone"):
        return "no rclone"
    return None
