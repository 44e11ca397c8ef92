"""A service's relative `workdir` (and TLS files) start where `serve up` runs, as `launch`'s
do (SkyPilot resolves them with os.path.abspath from there), for every replica the controller
launches."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import urllib.request
from pathlib import Path

import pytest
from servekit import get, skyform, wait_for

from skyform.serve import sandbox

pytestmark = [
    pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
    pytest.mark.usefixtures("serve_tests_exclusive"),
]

REPLICA = Path(__file__).parent / "plain_replica.py"

SERVICE = """\
name: relweb
service:
  readiness_probe:
    path: /health
    initial_delay_seconds: 30
  replicas: 1
resources:
  infra: local
  ports: 8080
workdir: ./app
run: exec python3 served.py 8080 0.0.0.0
"""


def test_a_replica_syncs_the_workdir_named_from_where_serve_up_ran(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    shutil.copy(REPLICA, repo / "app" / "served.py")  # only in the workdir: run finds it there
    (repo / "services").mkdir()
    (repo / "services" / "web.yaml").write_text(SERVICE)
    skyform("serve", "up", "services/web.yaml", "-y", cwd=repo)
    try:
        record = wait_for("relweb", "READY", timeout=90)
        assert get(f"{record['endpoint']}/") == (200, "1")
    finally:
        skyform("serve", "down", "relweb", "-y", cwd=repo)


def test_tls_files_named_relative_start_where_serve_up_ran(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    shutil.copy(REPLICA, repo / "app" / "served.py")
    (repo / "certs").mkdir()
    key, cert = repo / "certs" / "key.pem", repo / "certs" / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", cert],
        check=True, capture_output=True,
    )  # fmt: skip
    (repo / "services").mkdir()
    service = SERVICE.replace(
        "  replicas: 1\n",
        "  replicas: 1\n  tls: {keyfile: certs/key.pem, certfile: certs/cert.pem}\n",
    )
    (repo / "services" / "web.yaml").write_text(service)
    skyform("serve", "up", "services/web.yaml", "-y", cwd=repo)
    try:
        record = wait_for("relweb", "READY", timeout=90)
        assert record["endpoint"].startswith("https://")
        context = ssl.create_default_context(cafile=str(cert))
        context.check_hostname = False
        with urllib.request.urlopen(f"{record['endpoint']}/", timeout=10, context=context) as r:
            assert r.status == 200 and r.headers["X-Replica"] == "1"
    finally:
        skyform("serve", "down", "relweb", "-y", cwd=repo)
