"""Team mode shares node SSH keys through the store, encrypted with SKYFORM_PASSPHRASE, and
the nodes' host keys in the clear; a teammate with the passphrase gets both, without it (or
with another) a clear error; the embedded SQLite store keeps no keys."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from skyform.errors import StateError
from skyform.plan.model import ClusterSpec, PlacedOffer
from skyform.state.db import open_state
from skyform.state.models import ClusterHandle, ClusterRecord, ClusterStatus, NodeHandle
from skyform.state.teamkeys import unseal

OFFER = PlacedOffer(
    cloud="ssh",
    context="lab",
    region="lab",
    zone=None,
    instance_type="host",
    spot=False,
    hourly_price=0.0,
)
KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n"
HOST_LINE = "[127.0.0.1]:2201 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKeyOfNode0\n"


def _record(key_path: str) -> ClusterRecord:
    node = NodeHandle(
        rank=0,
        host="127.0.0.1",
        port=2201,
        user="u",
        identity_file=key_path,
        ip="127.0.0.1",
        node_id="ssh/lab/127.0.0.1:2201",
    )
    handle = ClusterHandle(name="train", engine="ssh", infra="ssh/lab", offer=OFFER, nodes=[node])
    return ClusterRecord(
        name="train",
        status=ClusterStatus.UP,
        handle=handle,
        hourly_price=0.0,
        spec=ClusterSpec(name="train", offer=OFFER, num_nodes=1),
    )


@pytest.fixture
def created(tmp_path, skyform_home, pg_url, monkeypatch):
    """The creator applied `train` with the team passphrase, then their machine went away."""
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "correct horse")
    key = tmp_path / "ci-key"
    key.write_bytes(KEY)
    (skyform_home / "known_hosts").write_text(HOST_LINE)
    with open_state() as db:
        db.put_cluster(_record(str(key)))
    key.unlink()
    teammate = tmp_path / "laptop"
    teammate.mkdir(mode=0o700)
    monkeypatch.setenv("SKYFORM_HOME", str(teammate))
    return teammate


def test_the_key_is_stored_encrypted(created):
    with open_state() as db:
        (row,) = db.execute("SELECT name, ciphertext FROM secrets").fetchall()
    assert row["ciphertext"].startswith("v1:")
    sealed = base64.b64decode(row["ciphertext"].split(":")[3])
    assert b"not-a-real-key" not in sealed and len(sealed) == len(KEY) + 16  # + GCM tag
    assert unseal("correct horse", row["ciphertext"], what="k") == KEY


def test_a_teammate_with_the_passphrase_gets_the_key_and_the_host_keys(created):
    with open_state() as db:
        record = db.require_cluster("train")
    path = record.handle.nodes[0].identity_file
    assert path.startswith(str(created / "keys" / "team"))
    assert Path(path).read_bytes() == KEY
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert (created / "known_hosts").read_text() == HOST_LINE


def test_without_the_passphrase_a_clear_error(created, monkeypatch):
    monkeypatch.delenv("SKYFORM_PASSPHRASE")
    with open_state() as db, pytest.raises(StateError) as err:
        db.require_cluster("train")
    assert err.value.message == "cluster 'train''s SSH key is in the team's state store, encrypted"
    assert "Set SKYFORM_PASSPHRASE" in (err.value.hint or "")
    assert not (created / "keys").exists()


def test_with_another_passphrase_a_clear_error(created, monkeypatch):
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "wrong")
    with open_state() as db, pytest.raises(StateError, match="cannot decrypt cluster 'train'"):
        db.require_cluster("train")
    assert not (created / "keys" / "team").exists() or not any(
        (created / "keys" / "team").iterdir()
    )


def test_down_forgets_the_shared_key(created):
    with open_state() as db:
        db.delete_cluster("train")
        assert db.execute("SELECT COUNT(*) AS n FROM secrets").fetchone()["n"] == 0


def test_the_embedded_store_keeps_no_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "correct horse")
    key = tmp_path / "key"
    key.write_bytes(KEY)
    with open_state() as db:
        db.put_cluster(_record(str(key)))
        assert db.execute("SELECT COUNT(*) AS n FROM secrets").fetchone()["n"] == 0
