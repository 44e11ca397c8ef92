"""skyform's known_hosts: accept-new, refusal of changed keys, OpenSSH format, 0600."""

from __future__ import annotations

import threading

import pytest

from skyform.errors import NodeUnreachable, SkyformError
from skyform.exec.hostkeys import HostKey, KnownHosts, parse_target

KEY_A = HostKey("ssh-ed25519", "AAAAC3NzaC1lZDI1NTE5AAAAIA" + "a" * 42)
KEY_B = HostKey("ssh-ed25519", "AAAAC3NzaC1lZDI1NTE5AAAAIB" + "b" * 42)


def test_first_contact_is_recorded_then_the_same_key_is_accepted(tmp_path):
    known = KnownHosts(tmp_path / "kh")
    known.check("10.0.0.5", 2201, KEY_A)
    known.check("10.0.0.5", 2201, KEY_A)
    known.check("10.0.0.6", 22, KEY_B)
    lines = (tmp_path / "kh").read_text().splitlines()
    assert lines == [
        f"[10.0.0.5]:2201 ssh-ed25519 {KEY_A.base64}",
        f"10.0.0.6 ssh-ed25519 {KEY_B.base64}",
    ]
    assert (tmp_path / "kh").stat().st_mode & 0o777 == 0o600


def test_a_changed_key_is_refused_and_not_recorded(tmp_path):
    known = KnownHosts(tmp_path / "kh")
    known.check("127.0.0.1", 2201, KEY_A)
    with pytest.raises(NodeUnreachable) as err:
        known.check("127.0.0.1", 2201, KEY_B)
    assert err.value.message.startswith("host key for 127.0.0.1:2201 changed")
    assert "possible man-in-the-middle" in err.value.message
    assert "skyform known-hosts forget 127.0.0.1:2201" in err.value.hint
    assert known.lookup("127.0.0.1", 2201) == [KEY_A]


def test_forget_and_remember(tmp_path):
    known = KnownHosts(tmp_path / "kh")
    known.check("h", 2201, KEY_A)
    known.check("h", 2202, KEY_A)
    assert known.forget("h", 2201) == 1
    assert known.forget("h", 2201) == 0
    assert known.lookup("h", 2202) == [KEY_A]
    known.remember("h", 2202, KEY_B)  # an engine that knows the key up front
    assert known.lookup("h", 2202) == [KEY_B]


def test_rsa_negotiated_as_sha2_matches_the_recorded_ssh_rsa_key(tmp_path):
    known = KnownHosts(tmp_path / "kh")
    known.remember("h", 22, HostKey("ssh-rsa", "AAAAB3rsa"))
    known.check("h", 22, HostKey("rsa-sha2-512", "AAAAB3rsa"))


def test_concurrent_first_contacts_keep_every_host(tmp_path):
    known = KnownHosts(tmp_path / "kh")
    threads = [
        threading.Thread(target=known.check, args=("10.0.0.1", 2200 + i, KEY_A)) for i in range(32)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len((tmp_path / "kh").read_text().splitlines()) == 32


def test_foreign_lines_survive_rewrites(tmp_path):
    path = tmp_path / "kh"
    path.write_text("# comment\n|1|hashed= ssh-ed25519 AAAA\nother,alias ssh-rsa AAAAB3\n")
    known = KnownHosts(path)
    known.check("new", 22, KEY_A)
    known.forget("new", 22)
    assert (
        path.read_text() == "# comment\n|1|hashed= ssh-ed25519 AAAA\nother,alias ssh-rsa AAAAB3\n"
    )
    assert known.lookup("alias", 22) == [HostKey("ssh-rsa", "AAAAB3")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:2201", ("127.0.0.1", 2201)),
        ("node.example.com", ("node.example.com", 22)),
        ("[::1]:2222", ("::1", 2222)),
        ("::1", ("::1", 22)),
    ],
)
def test_parse_target(text, expected):
    assert parse_target(text) == expected


@pytest.mark.parametrize("text", ["host:port", ":22", "h:0", "h:70000", "[::1]:x"])
def test_parse_target_refuses_nonsense(text):
    with pytest.raises(SkyformError, match="expected HOST:PORT"):
        parse_target(text)
