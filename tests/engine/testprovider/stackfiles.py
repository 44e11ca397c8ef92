"""What the real engine wrote for skyform: the stack's checkpoint in skyform's local backend,
and the stack as the CLI exports it with a given passphrase."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

PROJECT = "skyform"  # config.yaml's default pulumi.project


def checkpoint(skyform_home: Path, stack: str) -> Path:
    return skyform_home / "pulumi" / ".pulumi" / "stacks" / PROJECT / f"{stack}.json"


def latest(skyform_home: Path, stack: str) -> dict:
    return json.loads(checkpoint(skyform_home, stack).read_text())["checkpoint"]["latest"]


def resource(deployment: dict, type_: str, name: str) -> dict:
    (found,) = [
        r
        for r in deployment["resources"]
        if r["type"] == type_ and r["urn"].rsplit("::", 1)[-1] == name
    ]
    return found


def export(skyform_home: Path, stack: str, passphrase: str) -> subprocess.CompletedProcess:
    """`pulumi stack export --show-secrets` of a skyform stack, as a user would run it in the
    stack's work dir (the hint skyform's errors give)."""
    env = dict(
        os.environ,
        PULUMI_BACKEND_URL=(skyform_home / "pulumi").as_uri(),
        PULUMI_CONFIG_PASSPHRASE=passphrase,
    )
    return subprocess.run(
        ["pulumi", "stack", "export", "--show-secrets", "--stack", stack],
        cwd=skyform_home / "pulumi-work" / PROJECT / stack,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def files_holding(root: Path, text: str) -> list[Path]:
    """Every file under `root` whose bytes hold `text`."""
    needle = text.encode()
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]
