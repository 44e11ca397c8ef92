"""`skyform down --purge`: a cluster its engine cannot tear down (the Pulumi CLI gone, the
cloud extra not installed) is forgotten after saying what may be left; plain `down` refuses
and keeps the record, as it was when the engine refused before touching anything."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from skyform.plan.model import ClusterSpec, PlacedOffer
from skyform.state.db import open_state
from skyform.state.models import ClusterHandle, ClusterRecord, ClusterStatus, NodeHandle

OFFER = PlacedOffer(
    cloud="aws", region="us-east-1", zone="us-east-1a", instance_type="g6.xlarge", spot=False,
    hourly_price=0.805, accelerator="L4", accelerator_count=1, vcpus=4, memory_gib=16,
)  # fmt: skip


def _applied_cloud_cluster(name: str = "gpu") -> None:
    """What a finished apply on aws records: an UP cluster with its stack and node."""
    node = NodeHandle(rank=0, host="203.0.113.7", ip="10.0.0.7", node_id="i-0abc", user="ubuntu")
    record = ClusterRecord(
        name=name,
        status=ClusterStatus.UP,
        spec=ClusterSpec(name=name, offer=OFFER, num_nodes=1),
        handle=ClusterHandle(
            name=name,
            engine="pulumi",
            infra=OFFER.infra,
            offer=OFFER,
            nodes=[node],
            stack=f"skyform/{name}",
        ),
        hourly_price=OFFER.hourly_price,
        launched_at=1.0,
    )
    db = open_state()
    try:
        db.put_cluster(record)
        db.open_usage(record, reason="apply")
    finally:
        db.close()


def _clusters(with_status: bool = False) -> list:
    db = open_state()
    try:
        return [(r.name, r.status) if with_status else r.name for r in db.list_clusters()]
    finally:
        db.close()


@pytest.fixture
def no_pulumi_cli(monkeypatch):
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    monkeypatch.setenv(
        "PATH", os.pathsep.join(d for d in dirs if not (Path(d) / "pulumi").exists())
    )


def test_down_refuses_then_purge_forgets_when_the_pulumi_cli_is_gone(cli, no_pulumi_cli):
    _applied_cloud_cluster()
    stuck = cli("down", "-y", "gpu")
    assert stuck.exit_code == 1 and "the Pulumi CLI is not installed" in stuck.stderr
    assert _clusters() == ["gpu"]
    purged = cli("down", "--purge", "-y", "gpu")
    assert purged.exit_code == 0, purged.output
    assert "could not tear it down (cannot destroy cluster gpu" in purged.stdout
    assert (
        "the Pulumi stack skyform/gpu and what it made on aws/us-east-1/us-east-1a (nodes "
        "i-0abc) may still exist and cost money" in purged.stdout
    )
    assert "gpu down: purged from state" in purged.stdout
    assert _clusters() == []
    db = open_state()
    try:
        assert [u.ended_at is not None for u in db.usage()] == [True]  # no longer billed
        assert [e.kind for e in db.events(cluster="gpu")][-1] == "cluster.purged"
    finally:
        db.close()


def test_purge_forgets_a_cluster_whose_cloud_extra_is_missing(cli, monkeypatch):
    _applied_cloud_cluster("gone")
    monkeypatch.setitem(sys.modules, "skyform.stacks.pulumi.engine", None)  # not installed
    stuck = cli("down", "-y", "gone")
    assert stuck.exit_code == 1 and "no engine for aws in this build" in stuck.stderr
    purged = cli("down", "-a", "--purge", "-y")
    assert purged.exit_code == 0
    assert "could not tear it down (no engine for aws in this build of skyform)" in purged.stdout
    assert _clusters() == []


def test_a_teammate_without_the_passphrase_is_refused_and_the_cluster_stays_up(
    cli, pg_url, monkeypatch
):
    """Team mode: the stacks are in the state database under the team's passphrase. A
    `down` without SKYFORM_PASSPHRASE says to set it, touches nothing, and leaves the
    cluster UP for everyone (not INIT, as a teardown that stopped half-way would)."""
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    _applied_cloud_cluster()
    refused = cli("down", "-y", "gpu")
    assert refused.exit_code == 1, refused.output
    assert "SKYFORM_PASSPHRASE is not set" in refused.stderr
    assert _clusters(with_status=True) == [("gpu", ClusterStatus.UP)]
