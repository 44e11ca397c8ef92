"""catalog_digest: stable across processes and file locations, sensitive to any price."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from skyform.config import Config, LocalNode, SSHHost, SSHPool
from skyform.plan.catalog import BUNDLED_DIR, load_catalog

PRINT_DIGEST = (
    "from skyform.config import Config; from skyform.plan.catalog import load_catalog;"
    "c = load_catalog(Config()); print(c.digest, c.onprem_digest)"
)


def _digest_in_subprocess(seed: str, home: Path) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed, "SKYFORM_HOME": str(home)}
    out = subprocess.run(
        [sys.executable, "-c", PRINT_DIGEST], env=env, check=True, capture_output=True, text=True
    )
    return out.stdout.split()[0]


def test_digest_is_the_same_in_processes_with_different_hash_seeds(tmp_path, bundled):
    digests = {_digest_in_subprocess(seed, tmp_path) for seed in ("0", "1", "4242")}
    assert digests == {bundled.digest}


def test_digest_ignores_location_and_compression(catalog_copy: Path, bundled):
    plain = load_catalog(Config(), source=catalog_copy)  # uncompressed copies elsewhere
    assert plain.digest == bundled.digest
    assert load_catalog(Config(), source=BUNDLED_DIR).digest == bundled.digest


def test_digest_changes_when_one_price_changes(catalog_copy: Path, bundled):
    path = catalog_copy / "aws_vms.csv"
    text = path.read_text()
    assert ",21.957642," in text
    path.write_text(text.replace(",21.957642,", ",21.957643,", 1))
    changed = load_catalog(Config(), source=catalog_copy)
    assert changed.digest != bundled.digest


def test_digest_changes_with_egress_and_host_tables(catalog_copy: Path, bundled):
    egress = catalog_copy / "egress.csv"
    egress.write_text(egress.read_text().replace(",0.114,", ",0.115,", 1))
    assert load_catalog(Config(), source=catalog_copy).digest != bundled.digest


def test_onprem_digest_follows_config_values_only():
    base = Config(local=LocalNode(cpus=4, memory=16))
    same = load_catalog(Config(local=LocalNode(cpus=4, memory=16)))
    assert load_catalog(base).onprem_digest == same.onprem_digest
    pricier = load_catalog(Config(local=LocalNode(cpus=4, memory=16, hourly_price=0.5)))
    assert pricier.onprem_digest != same.onprem_digest
    assert pricier.digest == same.digest  # the cloud price digest does not move
    pool = SSHPool(hosts=[SSHHost(host="10.0.0.1", cpus=8, memory=32)])
    with_pool = load_catalog(Config(local=LocalNode(cpus=4, memory=16), ssh_pools={"lab": pool}))
    assert with_pool.onprem_digest != same.onprem_digest
