"""A replica's cluster is launched the way a managed job's is (lifecycle/driven.py), not through
`apply` of a plan file the controller wrote for itself: no plan file is left beside the
replica's task, and the cluster's usage says which service and which plan revision launched
it (`cost-report`), as a managed job's says `launch` or `recovery N` — not `apply`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from servekit import get, skyform, wait_for

from skyform.serve import sandbox

pytestmark = [
    pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
    pytest.mark.usefixtures("serve_tests_exclusive"),
]

APP = Path(__file__).parent / "replica_app.py"

SERVICE = f"""\
name: why
service:
  readiness_probe: {{path: /health, initial_delay_seconds: 20}}
  replicas: 1
resources: {{infra: local, ports: 8080}}
secrets:
  TOKEN: null
run: exec {sys.executable} {APP} 8080
"""


def test_a_replica_records_the_service_revision_that_launched_it(
    tmp_path: Path, skyform_home: Path
):
    task = tmp_path / "why.yaml"
    task.write_text(SERVICE)
    skyform("serve", "up", str(task), "-y", "--secret", "TOKEN=s3cret-value")
    try:
        record = wait_for("why", "READY")
        assert get(f"{record['endpoint']}/echo")[0] == 200
        folder = skyform_home / "serve" / "why"
        assert sorted(p.name for p in folder.glob("replica-*")) == ["replica-1.yaml"]
        report = json.loads(skyform("cost-report", "--json").stdout)
        (row,) = [r for r in report["clusters"] if r["name"] == "why-1"]
        assert [iv["reason"] for iv in row["intervals"]] == ["service why revision 1 (up)"]
        csv = skyform("cost-report", "--csv").stdout
        assert ",service why revision 1 (up)," in csv
        log = skyform("serve", "logs", "why", "--no-follow", "--controller").stdout
        assert "s3cret-value" not in log
    finally:
        skyform("serve", "down", "why", "-y")
