"""skyform's SSH key pair: made once, private 0600, usable by OpenSSH, safe to race."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from skyform.errors import StackError
from skyform.stacks import keys


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_first_use_generates_an_ed25519_pair_under_skyform_home(skyform_home):
    assert keys.load_key_pair() is None
    pair = keys.ensure_key_pair()
    assert pair.private_path == skyform_home / "keys" / "skyform-key"
    assert pair.public_path == skyform_home / "keys" / "skyform-key.pub"
    assert pair.public_key.startswith("ssh-ed25519 ") and pair.public_key.endswith(" skyform")
    assert mode(pair.private_path) == 0o600
    assert mode(pair.public_path) == 0o600
    assert mode(skyform_home / "keys") == 0o700
    assert b"OPENSSH PRIVATE KEY" in pair.private_path.read_bytes()


def test_the_pair_is_reused_not_regenerated():
    first = keys.ensure_key_pair()
    assert keys.ensure_key_pair() == first
    assert keys.load_key_pair() == first


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen")
def test_openssh_reads_the_private_key_and_agrees_on_the_fingerprint():
    pair = keys.ensure_key_pair()
    derived = subprocess.run(
        ["ssh-keygen", "-y", "-f", str(pair.private_path)], capture_output=True, text=True
    )
    assert derived.returncode == 0, derived.stderr
    assert derived.stdout.split()[:2] == pair.public_key.split()[:2]
    listed = subprocess.run(
        ["ssh-keygen", "-lf", str(pair.public_path)], capture_output=True, text=True
    )
    assert listed.stdout.split()[1] == pair.fingerprint


def test_a_lost_public_key_is_derived_again_and_loose_permissions_tightened():
    pair = keys.ensure_key_pair()
    pair.public_path.unlink()
    os.chmod(pair.private_path, 0o644)
    again = keys.ensure_key_pair()
    assert again.public_key == pair.public_key
    assert mode(pair.private_path) == 0o600


def test_a_corrupt_public_key_is_reported_with_what_to_do():
    pair = keys.ensure_key_pair()
    pair.public_path.write_text("not a key\n")
    with pytest.raises(StackError, match="is not an OpenSSH Ed25519 public key") as err:
        keys.load_key_pair()
    assert "Delete" in err.value.hint


def test_concurrent_first_use_yields_one_consistent_pair():
    with ThreadPoolExecutor(max_workers=8) as pool:
        pairs = list(pool.map(lambda _: keys.ensure_key_pair(), range(8)))
    final = keys.load_key_pair()
    assert {p.public_key for p in pairs} == {final.public_key}
    assert sorted(p.name for p in final.private_path.parent.iterdir()) == [
        "skyform-key",
        "skyform-key.pub",
    ]  # no temp files left behind


def test_short_id_names_the_key_stably():
    pair = keys.ensure_key_pair()
    assert len(pair.short_id) == 12 and pair.short_id == keys.load_key_pair().short_id


def test_a_fresh_skyform_home_is_created_private(skyform_home):
    os.rmdir(skyform_home)
    keys.ensure_key_pair()
    assert mode(skyform_home) == 0o700
