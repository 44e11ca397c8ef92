"""What the program inputs need from this machine: the SSH key, catalog, GCP project, kubeconfig.

Shared by the engine and `skyform export`; reads local files only (no cloud calls).
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from pathlib import Path

from skyform.config import Config
from skyform.errors import InfraUnusable
from skyform.stacks.keys import ensure_key_pair, key_id
from skyform.stacks.pulumi.cloud import InputContext
from skyform.stacks.pulumi.kubernetes.inputs import is_gke_context

GCP_PROJECT_VARS = (
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_PROJECT",
    "GCLOUD_PROJECT",
    "CLOUDSDK_CORE_PROJECT",
)
GCP_PROJECT_HINT = (
    "Set it with `gcloud config set project PROJECT_ID`, or export GOOGLE_CLOUD_PROJECT."
)


def gcp_project(env: Mapping[str, str] | None = None) -> str | None:
    """The project gcloud would use: environment first, then the active gcloud configuration."""
    env = os.environ if env is None else env
    for var in GCP_PROJECT_VARS:
        if env.get(var):
            return env[var]
    config_dir = Path(
        env.get("CLOUDSDK_CONFIG") or Path(env.get("HOME") or Path.home()) / ".config" / "gcloud"
    )
    try:
        active = (config_dir / "active_config").read_text().strip() or "default"
    except OSError:
        active = "default"
    parser = configparser.ConfigParser()
    try:
        parser.read(config_dir / "configurations" / f"config_{active}")
    except configparser.Error:
        return None
    return parser.get("core", "project", fallback=None) or None


def kube_current_context(env: Mapping[str, str] | None = None) -> str | None:
    import yaml

    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    paths = [Path(p) for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    for path in paths or [home / ".kube" / "config"]:
        try:
            doc = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(doc, dict) and doc.get("current-context"):
            return str(doc["current-context"])
    return None


def input_context(
    cloud: str,
    *,
    config: Config,
    catalog=None,
    plan_digest: str | None = None,
    context_name: str | None = None,
    require_project: bool = True,
    public_key: str | None = None,
) -> InputContext:
    """Everything `inputs.program_inputs` needs besides the cluster spec; `public_key`: the
    nodes' key when it is not skyform's own (made on first use)."""
    if catalog is None:
        from skyform.plan.catalog import load_catalog

        catalog = load_catalog(config)
    public_key = public_key or ensure_key_pair().public_key
    project = gcp_project() if cloud == "gcp" else None
    if cloud == "gcp" and project is None and require_project:
        raise InfraUnusable(
            "no GCP project is configured on this machine", GCP_PROJECT_HINT, nothing_made=True
        )
    gke = node_label = None
    if cloud == "kubernetes":
        gke = is_gke_context(context_name or kube_current_context())
        node_label = catalog.kubernetes.selector
    return InputContext(
        ssh_public_key=public_key,
        ssh_key_id=key_id(public_key),
        image_lookup=catalog.image_for,
        k8s_gpus=catalog.k8s_gpus,
        plan_digest=plan_digest,
        gcp_project=project,
        k8s_gke=gke,
        k8s_node_label=node_label,
    )
