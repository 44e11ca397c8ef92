"""Real sshd nodes (tests/sshnodes.py) and cluster handles for the exec tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]  # tests/ for sshnodes, tests/exec for execkit

from execkit import local_nodes, make_cluster  # noqa: E402

from skyform.state.models import ClusterHandle  # noqa: E402


@pytest.fixture(params=["ssh", "local"])
def cluster(request, tmp_path_factory) -> ClusterHandle:
    """A 3-node cluster on real sshd nodes, or on local directory nodes (parity)."""
    if request.param == "ssh":
        nodes = request.getfixturevalue("fresh_ssh_nodes")
        return make_cluster(nodes.handles()[:3])
    root = tmp_path_factory.mktemp("local-nodes")
    return make_cluster(local_nodes(root, 3), engine="local", gpus=0)
