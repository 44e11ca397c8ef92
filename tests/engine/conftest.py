"""The `engine` tests: the real Pulumi CLI and Kubernetes provider against a real
kube-apiserver (tests/kubecluster/)."""

from kubecluster.fixtures import engine_bin_dir, kube_cluster, kube_user  # noqa: F401
