"""Loading a catalog is opening its index: a fresh process that loads the bundled or a
refreshed catalog and asks what the optimizer asks reads none of the downloaded files (their
digest was recorded in the index at refresh) and imports neither the CSV parsers nor pydantic
(skyform.config) nor the Kubernetes readers — so a catalog ten times bigger costs a plan the
same start-up (bench/catalog_speed.py measures it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyform.plan.catalog.refresh import refresh_catalog
from tests.catalog.conftest import bundled_text

# Modules that only building an index (or the fixture catalog), ssh host probes or a
# Kubernetes query need.
NOT_FOR_LOADING = {
    "csv",
    "gzip",
    "pydantic",
    "skyform.config",
    "skyform.plan.catalog.tables",
    "skyform.plan.catalog.index_build",
    "skyform.plan.catalog.fixture",
    "skyform.plan.catalog.kubeconfig",
    "skyform.plan.catalog.k8s_nodes",
}
QUERY = (
    "accelerator='A100', accelerator_count=8, spot=False, arch='x86_64', cheapest_per_place=True"
)
PROBE = f"""
import json, sys
from skyform.plan.catalog import load_catalog
catalog = load_catalog()
offers = catalog.query({QUERY})
print(json.dumps([catalog.source.kind, catalog.digest, len(offers), sorted(sys.modules)]))
"""


def _fresh_load(home: Path) -> tuple[str, str, int, set[str]]:
    env = dict(os.environ, SKYFORM_HOME=str(home))
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True
    )
    kind, digest, found, modules = json.loads(proc.stdout)
    return kind, digest, found, set(modules)


def test_loading_the_bundled_catalog_reads_its_index_only(skyform_home):
    kind, _, found, modules = _fresh_load(skyform_home)
    assert kind == "bundled" and found > 0
    assert not modules & NOT_FOR_LOADING


@pytest.fixture
def refreshed(tmp_path: Path, skyform_home: Path) -> Path:
    mirror = tmp_path / "v8"
    for name, table in (("aws/vms.csv", "aws_vms.csv"), ("gcp/vms.csv", "gcp_vms.csv")):
        (mirror / name).parent.mkdir(parents=True, exist_ok=True)
        (mirror / name).write_text(bundled_text(table))
    refresh_catalog(mirror.as_uri())
    return skyform_home / "catalog"


def test_a_refreshed_catalog_is_answered_from_the_index_built_at_refresh(refreshed, skyform_home):
    kind, digest, found, modules = _fresh_load(skyform_home)
    assert kind == "refreshed" and found > 0
    assert not modules & NOT_FOR_LOADING
    # The downloaded tables are not read again: the digest was recorded in the index.
    aside = refreshed.parent / "downloaded-aside"
    aside.mkdir()
    for cloud in ("aws", "gcp"):
        (refreshed / cloud / "vms.csv").rename(aside / f"{cloud}.csv")
    assert _fresh_load(skyform_home)[:3] == (kind, digest, found)
