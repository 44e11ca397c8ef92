"""With the real Pulumi CLI (skipped where `pulumi` is not on PATH): a stack's whole life in
skyform's local backend, and `stack_outputs` reading what the CLI wrote, without the CLI.

The program registers no cloud resource, so no credentials or provider plugins are needed.
"""

from __future__ import annotations

import shutil

import pytest

from skyform.config import Config
from skyform.stacks.pulumi.backend import pulumi_settings, stack_outputs
from skyform.stacks.pulumi.errors import Operation

pytestmark = [
    pytest.mark.pulumi_cli,
    pytest.mark.skipif(shutil.which("pulumi") is None, reason="needs the pulumi CLI on PATH"),
]

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


def test_stack_lifecycle_in_the_local_backend(monkeypatch):
    from skyform.stacks.pulumi import workspace

    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
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
