"""Shared fixtures: an isolated SKYFORM_HOME per test and a CLI runner."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(Path(__file__).parent))  # `import helpers` from any test module

# Real sshd nodes on loopback, one set for the whole session (tests/sshnodes.py).
# A real S3 API (moto server) on loopback, for bucket file mounts (tests/motoserver.py).
# A GCS API (gcp-storage-emulator) on loopback, for gs:// file mounts (tests/gcsemulator.py).
from gcsemulator import gcs, gcs_endpoint  # noqa: E402, F401
from motoserver import moto_endpoint, s3  # noqa: E402, F401

# A throw-away PostgreSQL server (team mode), one per test process (tests/pgserver.py).
from pgserver import pg_server, pg_url  # noqa: E402, F401
from skyrun import Run  # noqa: E402  (the CLI's exit code and output, in and out of process)
from sshnodes_fixtures import fresh_ssh_nodes, make_ssh_nodes, ssh_nodes  # noqa: E402, F401


@pytest.fixture
def serve_tests_exclusive():
    """One serve test that makes sandboxes or keeps a client loop at a time (see
    helpers.sandboxes_exclusive); modules ask for it with pytest.mark.usefixtures."""
    from helpers import sandboxes_exclusive

    with sandboxes_exclusive():
        yield


@pytest.fixture(autouse=True)
def skyform_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Every test gets its own SKYFORM_HOME (and no kubeconfig) so nothing touches ~/.skyform."""
    home = tmp_path_factory.mktemp("skyform-home")
    monkeypatch.setenv("SKYFORM_HOME", str(home))
    # No test plans on this machine's Kubernetes contexts (tests/kubeapi.py serves its own).
    monkeypatch.setenv("KUBECONFIG", str(home / "no-kubeconfig"))
    monkeypatch.delenv("SKYFORM_DEBUG", raising=False)
    for name in ("SKYFORM_STATE_URL", "SKYFORM_PASSPHRASE", "SKYFORM_LEASE_TTL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "120")
    # no test fetches SkyPilot's catalog from the internet (tests/catalog/test_autofetch.py
    # turns it on against a server on loopback)
    monkeypatch.setenv("SKYFORM_CATALOG_AUTO_FETCH", "0")
    from skyform.paths import take_notices

    take_notices()  # a folder warning noted outside a command is not the next command's
    yield home
    if (home / "keepers").exists():  # SSH connection keepers this test started: not left idle
        from skyform.exec.keeperclient import stop_keepers

        stop_keepers(None)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once on each state store: the embedded SQLite file and PostgreSQL."""
    if request.param == "postgresql":
        monkeypatch.setenv("SKYFORM_STATE_URL", request.getfixturevalue("pg_url"))
    return request.param


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run `skyform ARGS...` in-process through the real exit boundary."""
    from skyform.cli.main import run

    def invoke(*args: str | os.PathLike) -> Run:
        capsys.readouterr()
        code = run([str(a) for a in args])
        out, err = capsys.readouterr()
        return Run(code, out, err)

    return invoke


@pytest.fixture
def kube_api():
    """A Kubernetes API server on loopback serving recorded node lists: `gke`, `eks`, `gfd`."""
    from kubeapi import KubeApi, recorded

    api = KubeApi()
    for name in ("gke", "eks", "gfd"):
        api.serve(name, recorded(name))
    yield api
    api.close()


@pytest.fixture
def kubeconfig(kube_api, tmp_path, monkeypatch):
    """Point KUBECONFIG at `kube_api`: kubeconfig({context: cluster}, current=NAME)."""

    def write(contexts: dict[str, str], current: str | None = None, **kw) -> Path:
        path = kube_api.kubeconfig(tmp_path / "kubeconfig", contexts, current, **kw)
        monkeypatch.setenv("KUBECONFIG", str(path))
        return path

    return write


def pytest_collection_modifyitems(config, items):
    """The real-engine tests run last: on a fresh machine `.ci/run` builds the engine in the
    background while the rest of the suite runs (a cold build takes about half an hour), and
    their fixture waits for that build."""
    items.sort(key=lambda item: item.get_closest_marker("engine") is not None)
