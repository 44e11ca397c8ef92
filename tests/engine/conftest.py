"""The `engine` tests: the real Pulumi CLI and Kubernetes provider against a real
kube-apiserver (tests/kubecluster/), and the real CLI with the test provider for AWS and GCP
(tests/engine/testprovider/)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # `import testprovider`

from kubecluster.fixtures import engine_bin_dir, kube_cluster, kube_user  # noqa: F401
from testprovider.fixtures import sky, test_cloud  # noqa: F401
