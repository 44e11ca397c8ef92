"""The test provider put where the real engine finds it: `pulumi-resource-aws` and
`pulumi-resource-gcp` shims first on PATH (the engine runs whatever plugin of that name PATH
holds when automatic plugin acquisition is off), the engine's environment, and the cloud
the tests read and act on. With `machines`, each instance boots a real machine with sshd.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from pathlib import Path

from kubecluster.engine import engine_env

from testprovider.cloud import ENV_DIR, Cloud
from testprovider.machines import ENV_SOCKET, MachineHost

HERE = Path(__file__).resolve().parent
PACKAGES = ("aws", "gcp")
GCP_PROJECT = "skyform-test-project"
# Credentials the clouds' SDKs would find; the test provider never checks them, and they must
# never reach a stack's state, a log or an output.
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYTESTSECRET"


def write_plugins(bin_dir: Path) -> Path:
    """The shims: each runs this venv's Python on the test provider for its package."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for package in PACKAGES:
        exe = bin_dir / f"pulumi-resource-{package}"
        exe.write_text(
            "#!/bin/sh\n"
            f"PYTHONPATH={shlex.quote(str(HERE.parent))} "
            f'exec {shlex.quote(sys.executable)} -m testprovider {package} "$@"\n'
        )
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir


class TestCloud:
    """The provider's cloud, its plugins on PATH and (optionally) machines for instances."""

    __test__ = False  # not a pytest test class

    def __init__(self, engine_bin: Path, root: Path, *, machines: bool = False) -> None:
        self.root = root
        self.cloud = Cloud(root / "cloud")
        self.plugins = write_plugins(root / "plugins")
        self.host = MachineHost(root / "machines") if machines else None
        env = engine_env(engine_bin, root / "pulumi-home", "")
        env.pop("PULUMI_BACKEND_URL")  # skyform chooses the backend (its own local one)
        env["PATH"] = f"{self.plugins}{os.pathsep}{env['PATH']}"
        env[ENV_DIR] = str(self.cloud.root)
        if self.host is not None:
            env[ENV_SOCKET] = self.host.socket_path
        env.update(
            AWS_ACCESS_KEY_ID="AKIATESTKEYID0000000",
            AWS_SECRET_ACCESS_KEY=AWS_SECRET,
            GOOGLE_CLOUD_PROJECT=GCP_PROJECT,
            GOOGLE_APPLICATION_CREDENTIALS=str(self._gcp_credentials()),
        )
        self.env = env

    def _gcp_credentials(self) -> Path:
        path = self.root / "gcp-adc.json"
        path.write_text(json.dumps({"type": "authorized_user", "client_id": "test"}))
        return path

    def terminate(self, type_: str, name: str, stack: str | None = None) -> None:
        """An instance ends out of band (a spot interruption): gone from the cloud's API, its
        machine (if any) stopped."""
        instance_id = self.cloud.terminate(type_, name, stack)
        if self.host is not None:
            self.host.halt(instance_id)

    def close(self) -> None:
        if self.host is not None:
            self.host.close()
