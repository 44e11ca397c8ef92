"""Helpers shared by test modules (importable as `helpers`; tests/ is on sys.path)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

# SkyPilot's example task files, kept beside the repo (../shared/compat, not redistributed
# here). A clone anywhere else has no such folder: the tests that read it skip and say why.
CORPUS = (Path(__file__).resolve().parents[2] / "shared" / "compat" / "skypilot-examples").resolve()
CORPUS_FILES = sorted(CORPUS.glob("*.y*ml")) if CORPUS.is_dir() else []
needs_corpus = pytest.mark.skipif(
    not CORPUS_FILES,
    reason=f"SkyPilot's example corpus is not at {CORPUS} (../shared/compat beside the repo)",
)

HEAVY = (
    "pulumi",
    "pulumi_aws",
    "pulumi_gcp",
    "pulumi_kubernetes",
    "kubernetes",  # the API client: only when a context's capacity must be read
    "pulp",
    "fabric",
    "paramiko",
)


def modules_loaded_by(args: list[str], env: dict | None = None) -> set[str]:
    """Run `skyform ARGS` in a fresh interpreter; return every module it imported."""
    code = (
        "import sys, json\n"
        "from skyform.cli.main import run\n"
        f"try:\n    run({args!r})\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('\\nMODULES=' + json.dumps(sorted(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, **(env or {})),
        check=False,
    )
    return set(json.loads(proc.stderr.rsplit("MODULES=", 1)[1]))


def heavy_modules(loaded: set[str]) -> set[str]:
    return {m.split(".")[0] for m in loaded} & set(HEAVY)


def source_imports(path) -> list[tuple[str, bool]]:
    """(module, at module level) for every absolute import in a Python file."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(path).read_text(), filename=str(path))
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, id(node) in top))
    return found


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@contextlib.contextmanager
def sandboxes_exclusive():
    """Held by every test that makes serve sandboxes, and by every serve test that keeps a
    client loop on an endpoint. Sandbox network namespaces are machine-wide and a freed
    index is claimed again at once, so under pytest-xdist another worker's service could
    take the index a test just checked was released; and two client loops (each with its
    LB, controller and replicas) on 2 cores starve the readiness probes (2 s timeouts) until
    replicas fail them: requests then get 503s that no real service would see."""
    import fcntl
    import tempfile

    with open(os.path.join(tempfile.gettempdir(), "skyform-tests-sandboxes.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def corpus_checkout(path, tmp_path):
    """A SkyPilot corpus file copied into `tmp_path/tasks`, with the workdir and plain mount
    sources it names made as folders, as the author's checkout has them (the corpus comes
    without its folders, and plan time now requires them). Set HOME for `~` paths, and run
    from `tmp_path/tasks`: relative paths start at the current directory, as in SkyPilot."""
    from pathlib import Path

    import yaml

    copy = Path(tmp_path) / "tasks" / Path(path).name
    copy.parent.mkdir(exist_ok=True)
    text = Path(path).read_text()
    copy.write_text(text)
    for doc in yaml.safe_load_all(text):
        if not isinstance(doc, dict):
            continue
        local = [doc["workdir"]] if isinstance(doc.get("workdir"), str) else []
        mounts = doc.get("file_mounts") or {}
        # buckets and sources with unresolved variables are not local folders
        local += [
            s for s in mounts.values() if isinstance(s, str) and "://" not in s and "$" not in s
        ]
        for name in local:
            (copy.parent / Path(name).expanduser()).mkdir(parents=True, exist_ok=True)
    return copy


def wait_until(predicate, timeout: float) -> None:
    """Poll `predicate` every 50 ms until it holds; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"not reached within {timeout:g} s")


def local_cluster_record(name: str):
    """An UP one-node `local` cluster's record, for tests that write state directly."""
    from skyform.plan.model import ClusterSpec, PlacedOffer
    from skyform.state.models import ClusterRecord, ClusterStatus

    offer = PlacedOffer(
        cloud="local",
        region="local",
        zone=None,
        instance_type="local",
        spot=False,
        hourly_price=0.0,
    )
    return ClusterRecord(
        name=name,
        status=ClusterStatus.UP,
        spec=ClusterSpec(name=name, offer=offer, num_nodes=1),
        hourly_price=0.0,
    )
