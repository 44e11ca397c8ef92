"""pytest fixtures over the Kubernetes test cluster. Use them from a conftest:

    from kubecluster.fixtures import engine_bin_dir, kube_cluster  # noqa: F401

The engine is built when absent (scripts/build-engine); a failed build or a cluster that does
not start fails the test with the reason, never skips it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubecluster.cluster import KubeCluster, missing_requirements
from kubecluster.controlplane import ControlPlaneError
from kubecluster.engine import EngineBuildError, engine_bin


@pytest.fixture(scope="session")
def engine_bin_dir() -> Path:
    """The bin directory of the real engine (pulumi, the Kubernetes provider, kube-apiserver,
    etcd)."""
    try:
        return engine_bin()
    except EngineBuildError as exc:
        failure = str(exc)
    pytest.fail(failure, pytrace=False)


@pytest.fixture(scope="session")
def kube_cluster(engine_bin_dir, tmp_path_factory):
    """One test cluster per test process (see kubecluster/cluster.py)."""
    reason = missing_requirements()
    if reason:
        pytest.fail(reason, pytrace=False)
    cluster = KubeCluster(engine_bin_dir, tmp_path_factory.mktemp("kubecluster"))
    failure = None
    try:
        cluster.start()
    except ControlPlaneError as exc:
        cluster.close()
        failure = f"the test cluster did not start: {exc}"
    if failure:
        pytest.fail(failure, pytrace=False)
    yield cluster
    cluster.close()
