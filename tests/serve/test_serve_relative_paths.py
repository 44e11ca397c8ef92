"""A service's relative `workdir` starts where `serve up` runs, as `launch`'s does (SkyPilot
resolves it with os.path.abspath from there), for every replica the controller launches."""

from __future__ import annotations

import shutil
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
