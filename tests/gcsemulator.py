"""A GCS JSON API on loopback: gcp-storage-emulator, one per test session.

Tests reach it the standard way, STORAGE_EMULATOR_HOST, which google-cloud-storage honours
(and skyform hands to rclone's gcs backend as its endpoint); every test starts from an empty
store (the emulator's /wipe). The emulator reports every bucket in location "US".
"""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from loopback import serve_tool


@pytest.fixture(scope="session")
def gcs_endpoint(tmp_path_factory):
    args = lambda port: ["start", "--host=127.0.0.1", f"--port={port}", "--in-memory"]  # noqa: E731
    tool, install = "gcp-storage-emulator", "pip install gcp-storage-emulator"
    yield from serve_tool(tmp_path_factory, tool, install, args, "/storage/v1/b")


@pytest.fixture
def gcs(gcs_endpoint, monkeypatch):
    """A google-cloud-storage client on an empty emulator; the environment points skyform
    (and the CLI subprocesses, which inherit it) at the same store."""
    from google.cloud import storage

    urllib.request.urlopen(gcs_endpoint + "/wipe", timeout=10)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_endpoint)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "skyform-test")
    return storage.Client(project="skyform-test")


def blob_names(gcs, bucket: str) -> list[str]:
    return sorted(b.name for b in gcs.list_blobs(bucket))
