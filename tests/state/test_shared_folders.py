"""Folders skyform did not create keep their modes (issue 26): SKYFORM_HOME=$HOME or `.`, a
`sqlite:///` state URL in /tmp, the known-hosts and keeper folders. Only the folders skyform
makes get its 0700; the files it writes are 0600; a home or state folder that others can
read is used as it is, with one warning per command.

The stand-ins for $HOME (0755) and /tmp (1777) are folders of the test's own: never the
real ones."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from skyform.exec.hostkeys import KnownHosts
from skyform.paths import ensure_dir

HELLO = "name: hello\nresources: {infra: local}\nrun: echo hello\n"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _shared(path: Path, mode: int) -> Path:
    path.mkdir()
    os.chmod(path, mode)  # exactly, whatever the umask
    return path


@pytest.fixture
def task(tmp_path: Path) -> Path:
    path = tmp_path / "hello.yaml"
    path.write_text(HELLO)
    return path


def test_ensure_dir_makes_missing_levels_0700_and_leaves_existing_ones(tmp_path):
    shared = _shared(tmp_path / "shared", 0o1777)
    old_umask = os.umask(0o022)  # the usual umask would have made the parents 0755
    try:
        ensure_dir(shared)
        ensure_dir(shared / "a" / "b")
    finally:
        os.umask(old_umask)
    assert _mode(shared) == 0o1777
    assert _mode(shared / "a") == 0o700 and _mode(shared / "a" / "b") == 0o700
    os.chmod(shared / "a" / "b", 0o750)  # the user opened one skyform made: theirs now
    ensure_dir(shared / "a" / "b")
    assert _mode(shared / "a" / "b") == 0o750


def test_home_that_others_can_read_is_used_as_it_is_with_one_warning(
    cli, tmp_path, task, monkeypatch
):
    home = _shared(tmp_path / "home", 0o700)
    monkeypatch.setenv("SKYFORM_HOME", str(home))
    private = cli("launch", task, "-y")
    assert private.exit_code == 0 and "Warning" not in private.stderr  # nothing to say
    assert cli("down", "-y", "hello").exit_code == 0
    os.chmod(home, 0o755)  # as $HOME is on most systems
    launched = cli("launch", task, "-y")
    assert launched.exit_code == 0, launched.output
    warning = f"Warning: SKYFORM_HOME {home} can be read by other users (mode 0755)"
    assert launched.stderr.count(warning) == 1, launched.stderr
    status = cli("status")
    assert status.exit_code == 0 and status.stderr.count(warning) == 1, status.stderr
    assert _mode(home) == 0o755
    assert _mode(home / "state.db") == 0o600
    made = [p for p in home.iterdir() if p.is_dir()]
    assert made and {_mode(p) for p in made} == {0o700}, made
    assert cli("down", "-y", "hello").exit_code == 0
    assert _mode(home) == 0o755


def test_home_as_the_current_directory_keeps_its_mode(cli, tmp_path, task, monkeypatch):
    cwd = _shared(tmp_path / "project", 0o755)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("SKYFORM_HOME", ".")
    assert cli("launch", task, "-y").exit_code == 0
    assert _mode(cwd) == 0o755
    assert cli("down", "-y", "hello").exit_code == 0
    assert _mode(cwd) == 0o755


def test_a_state_url_in_a_sticky_shared_folder_keeps_the_sticky_bit(cli, tmp_path, monkeypatch):
    """`state migrate --to sqlite:////tmp/state.db` once dropped /tmp's sticky bit."""
    shared_tmp = _shared(tmp_path / "tmp", 0o1777)
    migrated = cli("state", "migrate", "--to", f"sqlite:///{shared_tmp}/state.db")
    assert migrated.exit_code == 0, migrated.output
    assert _mode(shared_tmp) == 0o1777
    assert _mode(shared_tmp / "state.db") == 0o600
    assert (
        f"Warning: the state folder {shared_tmp} can be read and written by other users "
        "(mode 1777)" in migrated.stderr
    )
    monkeypatch.setenv("SKYFORM_STATE_URL", f"sqlite:///{shared_tmp}/state.db")
    assert cli("status").exit_code == 0
    assert _mode(shared_tmp) == 0o1777


def test_a_missing_state_folder_is_made_private(cli, tmp_path):
    target = tmp_path / "new" / "state"
    assert cli("state", "migrate", "--to", f"sqlite:///{target}/state.db").exit_code == 0
    assert _mode(tmp_path / "new") == 0o700 and _mode(target) == 0o700


def test_the_known_hosts_folder_is_left_as_it_is(tmp_path):
    folder = _shared(tmp_path / "ssh", 0o755)
    known = KnownHosts(folder / "known_hosts")
    with known._locked():
        known._write(["[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGnotreal"])
    assert _mode(folder) == 0o755
    assert _mode(folder / "known_hosts") == 0o600


def test_a_pulumi_file_backend_folder_is_left_as_it_is(tmp_path):
    from skyform.config import Config, PulumiSettings
    from skyform.stacks.pulumi.backend import pulumi_settings

    shared = _shared(tmp_path / "stacks", 0o775)
    url = f"file://{shared}"
    pulumi_settings(Config(pulumi=PulumiSettings(backend_url=url))).cli_env()
    assert _mode(shared) == 0o775
