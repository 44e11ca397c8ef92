"""Backend settings, the passphrase, and reading stack outputs without the Pulumi CLI."""

from __future__ import annotations

import gzip
import json
import os
import stat

import pytest

from skyform.config import Config, PulumiSettings
from skyform.errors import ConfigError, StackError
from skyform.paths import ensure_dir
from skyform.stacks.pulumi.backend import (
    ensure_passphrase,
    local_backend_dir,
    pulumi_settings,
    stack_outputs,
)

OUTPUTS = {
    "nodes": [{"rank": 0, "id": "i-1", "public_ip": "54.0.0.1", "private_ip": "10.0.0.1"}],
    "ssh_user": "ubuntu",
}


def checkpoint(stack: str = "c1", project: str = "skyform", outputs=OUTPUTS) -> dict:
    """The shape the CLI writes into a file backend (apitype.VersionedCheckpoint v3)."""
    return {
        "version": 3,
        "checkpoint": {
            "stack": f"organization/{project}/{stack}",
            "latest": {
                "manifest": {"time": "2026-11-29T10:00:00Z", "version": "v3.272.0"},
                "secrets_providers": {"type": "passphrase", "state": {"salt": "v1:abc"}},
                "resources": [
                    {
                        "urn": f"urn:pulumi:{stack}::{project}::pulumi:pulumi:Stack::"
                        f"{project}-{stack}",
                        "custom": False,
                        "type": "pulumi:pulumi:Stack",
                        "outputs": outputs,
                    },
                    {
                        "urn": f"urn:pulumi:{stack}::{project}::aws:ec2/instance:Instance::node-0",
                        "custom": True,
                        "type": "aws:ec2/instance:Instance",
                        "outputs": {"instanceState": "running"},
                    },
                ],
            },
        },
    }


def test_default_backend_is_a_directory_under_skyform_home(skyform_home, monkeypatch):
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    settings = pulumi_settings(Config())
    assert settings.backend_url == (skyform_home / "pulumi").as_uri()
    assert settings.project == "skyform"
    assert settings.qualified("train") == "skyform/train"
    assert settings.work_dir("train") == skyform_home / "pulumi-work" / "skyform" / "train"


def test_config_beats_the_environment_which_beats_the_default(monkeypatch):
    monkeypatch.setenv("PULUMI_BACKEND_URL", "s3://team-state")
    assert pulumi_settings(Config()).backend_url == "s3://team-state"
    config = Config(pulumi=PulumiSettings(backend_url="gs://ours", project="ml"))
    settings = pulumi_settings(config)
    assert (settings.backend_url, settings.qualified("c1")) == ("gs://ours", "ml/c1")


def test_invalid_names_are_refused(monkeypatch):
    with pytest.raises(ConfigError, match="not a valid Pulumi project name"):
        pulumi_settings(Config(pulumi=PulumiSettings(project="my project")))
    with pytest.raises(StackError, match="cannot name a Pulumi stack"):
        pulumi_settings(Config()).qualified("a/b")


def test_passphrase_is_generated_once_0600_and_reaches_the_cli_env(skyform_home):
    settings = pulumi_settings(Config())
    env = settings.cli_env()
    path = skyform_home / "secrets" / "pulumi-passphrase"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert env["PULUMI_CONFIG_PASSPHRASE"] == path.read_text().strip()
    assert len(env["PULUMI_CONFIG_PASSPHRASE"]) >= 40
    assert settings.cli_env() == env  # stable across calls
    assert (skyform_home / "pulumi").is_dir()  # the local backend directory exists


def test_the_first_stacks_made_at_once_share_one_passphrase(tmp_path, monkeypatch):
    """Two threads (a service's replicas, launched together) generate the passphrase at
    once: both get the same one, neither reads the file before it is written."""
    import secrets
    import threading
    import time

    slow = secrets.token_urlsafe

    def token(n: int) -> str:
        time.sleep(0.2)  # generating the secret is where a reader could slip in
        return slow(n)

    monkeypatch.setattr(secrets, "token_urlsafe", token)
    path = tmp_path / "secrets" / "pulumi-passphrase"
    got: list[object] = []

    def make() -> None:
        try:
            got.append(ensure_passphrase(path))
        except StackError as exc:
            got.append(exc)

    threads = [threading.Thread(target=make) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(got)) == 1 and got[0] == path.read_text().strip()
    assert len(path.read_text().strip()) >= 40
    assert sorted(p.name for p in path.parent.iterdir()) == ["pulumi-passphrase"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_emptied_passphrase_file_is_an_error_not_a_new_secret(tmp_path):
    path = tmp_path / "p"
    path.write_text("\n")
    with pytest.raises(StackError, match="is empty"):
        ensure_passphrase(path)


def test_local_backend_dir():
    assert local_backend_dir("file:///var/state").as_posix() == "/var/state"
    assert local_backend_dir("file://~/state").as_posix().endswith("/state")
    assert local_backend_dir("s3://bucket") is None
    assert local_backend_dir("https://api.pulumi.com") is None


@pytest.mark.parametrize(
    "relative",
    [
        ".pulumi/stacks/skyform/c1.json",
        ".pulumi/stacks/c1.json",
        ".pulumi/stacks/skyform/c1.json.gz",
    ],
)
def test_stack_outputs_reads_the_local_backend_without_the_cli(skyform_home, relative):
    path = skyform_home / "pulumi" / relative
    path.parent.mkdir(parents=True)
    data = json.dumps(checkpoint()).encode()
    path.write_bytes(gzip.compress(data) if relative.endswith(".gz") else data)
    assert stack_outputs("c1", Config()) == OUTPUTS


def test_stack_outputs_is_none_when_it_cannot_know(skyform_home, monkeypatch):
    assert stack_outputs("c1", Config()) is None  # no stack
    path = skyform_home / "pulumi" / ".pulumi" / "stacks" / "skyform" / "c1.json"
    path.parent.mkdir(parents=True)
    path.write_text("{truncated")
    assert stack_outputs("c1", Config()) is None  # unreadable
    empty = checkpoint()
    empty["checkpoint"]["latest"] = None
    path.write_text(json.dumps(empty))
    assert stack_outputs("c1", Config()) is None  # never updated
    path.write_text(json.dumps(checkpoint()))
    assert stack_outputs("c1", Config(pulumi=PulumiSettings(backend_url="s3://x"))) is None
    assert stack_outputs("c1", Config(pulumi=PulumiSettings(project="other"))) is None
    assert stack_outputs("bad/name", Config()) is None


def test_directories_skyform_makes_are_private(skyform_home):
    os.rmdir(skyform_home)  # as on a fresh machine
    settings = pulumi_settings(Config())
    settings.cli_env()
    ensure_dir(settings.work_dir("c1"))
    for path in (
        skyform_home,
        skyform_home / "secrets",
        skyform_home / "pulumi",
        skyform_home / "pulumi-work",
        skyform_home / "pulumi-work" / "skyform",
        skyform_home / "pulumi-work" / "skyform" / "c1",
    ):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path


def test_a_postgresql_state_is_the_default_backend_and_settings_override_it(monkeypatch):
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    monkeypatch.delenv("PGSSLMODE", raising=False)
    monkeypatch.setenv("SKYFORM_STATE_URL", "postgresql://ci@db.lab:5432/skyform")
    team = pulumi_settings(Config())
    assert team.backend_url == "postgres://ci@db.lab:5432/skyform?sslmode=prefer"
    assert team.team
    monkeypatch.setenv("PULUMI_BACKEND_URL", "s3://team-stacks")
    assert pulumi_settings(Config()).backend_url == "s3://team-stacks"
    config = Config(pulumi=PulumiSettings(backend_url="azblob://stacks"))
    assert pulumi_settings(config).backend_url == "azblob://stacks"


def test_a_sqlite_state_keeps_the_local_backend(skyform_home, monkeypatch):
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    monkeypatch.setenv("SKYFORM_STATE_URL", f"sqlite:///{skyform_home}/state.db")
    assert pulumi_settings(Config()).backend_url == (skyform_home / "pulumi").as_uri()


@pytest.mark.parametrize(
    ("state_url", "pgsslmode", "backend_url"),
    [
        # lib/pq, the CLI's driver, would require TLS: libpq's default (the store's) instead
        ("postgresql://ci@db:5432/sky", None, "postgres://ci@db:5432/sky?sslmode=prefer"),
        (
            "postgresql://ci@db/sky?connect_timeout=5",
            None,
            "postgres://ci@db/sky?connect_timeout=5&sslmode=prefer",
        ),
        # the user's own choice stands, in the URL or in the environment both drivers read
        (
            "postgres://ci@db/sky?sslmode=verify-full",
            None,
            "postgres://ci@db/sky?sslmode=verify-full",
        ),
        ("postgresql://ci@db/sky", "disable", "postgres://ci@db/sky"),
    ],
)
def test_the_team_backend_reaches_the_database_as_the_state_store_does(
    monkeypatch, state_url, pgsslmode, backend_url
):
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    monkeypatch.setenv("SKYFORM_STATE_URL", state_url)
    if pgsslmode:
        monkeypatch.setenv("PGSSLMODE", pgsslmode)
    else:
        monkeypatch.delenv("PGSSLMODE", raising=False)
    assert pulumi_settings(Config()).backend_url == backend_url


def test_stacks_in_the_team_database_take_only_the_teams_passphrase(skyform_home, monkeypatch):
    """Without SKYFORM_PASSPHRASE a stack in the shared database would be encrypted with
    this home's own passphrase, which no teammate has: refused, saying which to set; the
    password in the URL is not shown and no passphrase of this home is made."""
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    monkeypatch.setenv("SKYFORM_STATE_URL", "postgresql://ci:pw-123@db.lab:5432/skyform")
    settings = pulumi_settings(Config())
    with pytest.raises(StackError) as err:
        settings.cli_env()
    assert "SKYFORM_PASSPHRASE is not set" in err.value.message
    assert "postgres://ci:***@db.lab:5432/skyform" in err.value.message
    assert "pw-123" not in f"{err.value.message} {err.value.hint}"
    assert "Set SKYFORM_PASSPHRASE to the team's passphrase" in (err.value.hint or "")
    assert not (skyform_home / "secrets").exists()
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "team passphrase")
    assert settings.cli_env()["PULUMI_CONFIG_PASSPHRASE"] == "team passphrase"
    # A backend of the user's choosing keeps this home's passphrase when none is set.
    monkeypatch.delenv("SKYFORM_PASSPHRASE")
    chosen = pulumi_settings(Config(pulumi=PulumiSettings(backend_url="s3://ours")))
    assert not chosen.team
    assert chosen.cli_env()["PULUMI_CONFIG_PASSPHRASE"] == ensure_passphrase(
        skyform_home / "secrets" / "pulumi-passphrase"
    )
