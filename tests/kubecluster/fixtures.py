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


@pytest.fixture
def kube_user(kube_cluster, engine_bin_dir, skyform_home, tmp_path):
    """A skyform user of the session's test cluster (kubecluster/skyuser.py): this test's
    SKYFORM_HOME, a kubeconfig for the cluster, the CLI's environment; commands run in
    tmp_path/work. Clusters a test leaves are taken down afterwards (and what the API still
    holds of them deleted), so the next test starts on an empty cluster."""
    from kubecluster.skyuser import make_user

    work = tmp_path / "work"
    work.mkdir()
    user = make_user(kube_cluster, engine_bin_dir, skyform_home, work)
    yield user
    user.sky("down", "-a", "-y", "--purge", check=None, timeout=300)
    _delete_labelled(kube_cluster)


def _delete_labelled(cluster) -> None:
    """Whatever skyform's clusters left in the API (a test that failed half-way)."""
    from kubecluster.skyuser import KINDS, NAMESPACE

    for kind in KINDS:
        path = f"/api/v1/namespaces/{NAMESPACE}/{kind}"
        for item in cluster.rest.get(f"{path}?labelSelector=skyform%2Fcluster")["items"]:
            cluster.rest.delete(f"{path}/{item['metadata']['name']}")
