"""The real engine's binaries for tests: scripts/build-engine's bin directory, built on demand
(a cold build takes tens of minutes; a warm call returns at once). A failed build fails the
test with the build's own error: the `engine` tests are never skipped."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "scripts" / "build-engine"
BINARIES = ("pulumi", "pulumi-resource-kubernetes", "kube-apiserver", "etcd")


class EngineBuildError(RuntimeError):
    pass


@functools.cache
def engine_bin() -> Path:
    proc = subprocess.run(
        [str(BUILD)], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
    )
    if proc.returncode != 0:
        raise EngineBuildError(
            f"scripts/build-engine failed (exit {proc.returncode}):\n{proc.stderr[-6000:]}"
        )
    bin_dir = Path(proc.stdout.strip().splitlines()[-1])
    missing = [b for b in BINARIES if not os.access(bin_dir / b, os.X_OK)]
    if missing:
        raise EngineBuildError(f"scripts/build-engine printed {bin_dir}, which lacks {missing}")
    return bin_dir


def engine_env(bin_dir: Path, pulumi_home: Path, backend_url: str) -> dict[str, str]:
    """The environment that runs the real CLI offline: the bin dir first on PATH (plugins are
    found there by name), its own PULUMI_HOME, no update check, no plugin download."""
    return {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PULUMI_HOME": str(pulumi_home),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_BACKEND_URL": backend_url,
    }
