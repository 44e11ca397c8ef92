"""With the real Pulumi CLI (scripts/build-engine's, built when absent): a stack's whole life
in skyform's local backend, and `stack_outputs` reading what the CLI wrote, without the CLI.

The program registers no cloud resource, so no credentials or provider plugins are needed.
"""

from __future__ import annotations

import os

import pytest

from skyform.config import Config
from skyform.errors import StackError
from skyform.stacks.pulumi.backend import pulumi_settings, stack_outputs
from skyform.stacks.pulumi.errors import Operation

pytestmark = [pytest.mark.pulumi_cli, pytest.mark.engine]

NODES = [{"rank": 0, "id": "n-0", "public_ip": "203.0.113.7", "private_ip": "10.0.0.7", "port": 22}]


def program() -> None:
    import pulumi

    pulumi.export("nodes", NODES)
    pulumi.export("ssh_user", "ubuntu")


def operation(settings, verb: str) -> Operation:
    return Operation(
        verb=verb,
        cluster="realcli",
        stack=settings.qualified("realcli"),
        cloud="aws",
        backend_url=settings.backend_url,
        work_dir=str(settings.work_dir("realcli")),
    )


def real_cli(monkeypatch, engine_bin_dir, tmp_path) -> None:
    monkeypatch.setenv("PATH", f"{engine_bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "pulumi-home"))
    monkeypatch.setenv("PULUMI_SKIP_UPDATE_CHECK", "true")
    monkeypatch.setenv("PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", "true")
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)


def test_stack_lifecycle_in_the_local_backend(monkeypatch, engine_bin_dir, tmp_path):
    from skyform.stacks.pulumi import workspace

    real_cli(monkeypatch, engine_bin_dir, tmp_path)
    settings = pulumi_settings(Config())
    lines: list[str] = []
    changes, _ = workspace.preview(settings, operation(settings, "preview"), program, lines.append)
    assert changes.get("create") == 1  # the stack resource itself
    outputs = workspace.up(settings, operation(settings, "up"), program, lines.append)
    assert outputs == {"nodes": NODES, "ssh_user": "ubuntu"}
    assert stack_outputs("realcli", Config()) == outputs  # the file layout skyform reads
    resources = workspace.refresh(settings, operation(settings, "refresh"), lines.append)
    assert [r["type"] for r in resources] == ["pulumi:pulumi:Stack"]
    assert workspace.destroy(settings, operation(settings, "destroy"), lines.append) is True
    assert stack_outputs("realcli", Config()) is None
    assert workspace.destroy(settings, operation(settings, "destroy"), lines.append) is False


def test_a_stack_in_the_team_database_is_made_in_one_home_and_destroyed_from_another(
    monkeypatch, engine_bin_dir, tmp_path, pg_url
):
    """Team mode with the real CLI and a real PostgreSQL (no TLS, as most on a LAN): the
    stack goes to Pulumi's postgres:// backend on the state database and a second
    SKYFORM_HOME, with an empty work dir and the team's passphrase, destroys it; with
    another passphrase it is told which to set and the stack stays."""
    from skyform.stacks.pulumi import workspace

    real_cli(monkeypatch, engine_bin_dir, tmp_path)
    monkeypatch.delenv("PGSSLMODE", raising=False)
    monkeypatch.setenv("SKYFORM_STATE_URL", pg_url)
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "the team's")
    lines: list[str] = []
    made = pulumi_settings(Config())
    outputs = workspace.up(made, operation(made, "up"), program, lines.append)
    assert outputs == {"nodes": NODES, "ssh_user": "ubuntu"}
    assert not (tmp_path / "skyform-home-of-ci").exists()

    monkeypatch.setenv("SKYFORM_HOME", str(tmp_path / "skyform-home-of-ci"))
    other = pulumi_settings(Config())
    assert not other.work_dir("realcli").exists()
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "not the team's")
    with pytest.raises(StackError) as err:
        workspace.destroy(other, operation(other, "destroy"), lines.append)
    assert "encrypted with another passphrase" in err.value.message
    assert "SKYFORM_PASSPHRASE" in (err.value.hint or "")
    assert workspace.stack_exists(other, operation(other, "destroy"))

    monkeypatch.setenv("SKYFORM_PASSPHRASE", "the team's")
    assert workspace.destroy(other, operation(other, "destroy"), lines.append) is True
    assert not workspace.stack_exists(other, operation(other, "destroy"))
