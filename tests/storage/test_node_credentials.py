"""Which credentials rclone gets on a cluster's nodes for a bucket mount: a cloud VM's own
identity (instance profile, service account), else this machine's endpoint and keys — a
Kubernetes pod has no identity of the bucket's cloud, so it is the latter there, as on ssh
hosts (SkyPilot sends a pod the local credentials)."""

from __future__ import annotations

import pytest

from skyform.config import StorageSettings
from skyform.plan.model import PlacedOffer
from skyform.state.models import ClusterHandle, NodeHandle, NodeKind
from skyform.storage.attach import rclone_env

ENDPOINT = "http://10.244.1.1:9000"


def _cluster(cloud: str, engine: str) -> ClusterHandle:
    offer = PlacedOffer(
        cloud=cloud,
        region="r",
        zone=None,
        instance_type="t",
        spot=False,
        hourly_price=0.0,
        context="ctx" if cloud == "kubernetes" else None,
    )
    node = NodeHandle(rank=0, kind=NodeKind.SSH, host="10.0.0.2", ip="10.0.0.2", node_id="n0")
    return ClusterHandle(name="c", engine=engine, infra=offer.infra, offer=offer, nodes=[node])


@pytest.fixture
def local_keys(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", ENDPOINT)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")


@pytest.mark.parametrize(("cloud", "engine"), [("kubernetes", "pulumi"), ("ssh", "ssh")])
def test_pods_and_hosts_reach_the_store_with_this_machines_endpoint_and_keys(
    local_keys, cloud, engine
):
    env = rclone_env("s3", StorageSettings(), _cluster(cloud, engine))
    assert env["RCLONE_CONFIG_SKY_ENDPOINT"] == ENDPOINT
    assert env["RCLONE_CONFIG_SKY_ACCESS_KEY_ID"] == "key-id"
    assert env["RCLONE_CONFIG_SKY_SECRET_ACCESS_KEY"] == "secret"
    assert "RCLONE_CONFIG_SKY_ENV_AUTH" not in env


def test_an_aws_instance_uses_its_own_identity(local_keys):
    env = rclone_env("s3", StorageSettings(), _cluster("aws", "pulumi"))
    assert env == {
        "RCLONE_CONFIG_SKY_TYPE": "s3",
        "RCLONE_CONFIG_SKY_PROVIDER": "AWS",
        "RCLONE_CONFIG_SKY_ENV_AUTH": "true",
    }
