"""The pulumi engine's health, read without the SDK or the engine: does a cluster's stack
still hold its nodes (a local backend's files), and `skyform check`'s rows (each cloud
folder's credential check, and the pulumi CLI)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from skyform.config import Config
from skyform.infra import InfraKind
from skyform.stacks.health import InfraStatus
from skyform.stacks.pulumi.backend import stack_has_nodes
from skyform.stacks.pulumi.cloud import pulumi_cloud
from skyform.state.models import ClusterHandle


def nodes_gone(handle: ClusterHandle) -> bool:
    """The stack, or every node in it, is gone (e.g. destroyed outside skyform)."""
    return stack_has_nodes(handle.name) is False


def check(
    row: InfraKind, config: Config, env: Mapping[str, str], user_home: Path
) -> list[InfraStatus]:
    return [pulumi_cloud(row.name).check(env, user_home, config)]


def tool_check() -> InfraStatus | None:
    return check_pulumi_cli()


def check_pulumi_cli() -> InfraStatus:
    exe = shutil.which("pulumi")
    if exe is None:
        return InfraStatus(
            "pulumi",
            False,
            "pulumi CLI not on PATH (needed to apply aws/gcp/kubernetes stacks)",
            "install it: curl -fsSL https://get.pulumi.com | sh",
        )
    try:
        out = subprocess.run(
            [exe, "version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        out = "version unknown"
    return InfraStatus("pulumi", True, f"{exe} ({out or 'version unknown'})")
