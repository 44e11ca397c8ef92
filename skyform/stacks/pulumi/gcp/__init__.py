"""GCP: Compute Engine VMs in one zone, reached over SSH (program.py is the Pulumi program)."""

from __future__ import annotations

from skyform.stacks.pulumi.cloud import PulumiCloud
from skyform.stacks.pulumi.gcp.credentials import check_gcp
from skyform.stacks.pulumi.gcp.inputs import gcp_inputs, gcp_storage_inputs

# GPUs the open kernel module does not drive: the CUDA 12 image with the proprietary driver
PRE_TURING_GPUS = frozenset({"K80", "M60", "P4", "P100", "V100", "V100-32GB"})


def _images(gpu: bool, arm: bool, accelerator: str | None) -> list[str]:
    if gpu:
        legacy = "custom-gpu-ubuntu-2204"
        return [legacy] if accelerator in PRE_TURING_GPUS else [f"{legacy}-cuda13", legacy]
    return ["custom-cpu-ubuntu-2204-arm64" if arm else "custom-cpu-ubuntu-2204"]


CLOUD = PulumiCloud(
    name="gcp",
    inputs=gcp_inputs,
    node_type="gcp:compute/instance:Instance",
    alive=frozenset({"RUNNING", "PROVISIONING", "STAGING"}),
    node_state=lambda outputs: str(outputs.get("currentStatus") or ""),
    default_images=_images,
    check=check_gcp,
    credential_patterns=(
        "could not find default credentials",
        "oauth2: cannot fetch token",
        "invalid_grant",
        "Reauthentication failed",
        "Request had invalid authentication credentials",
        "project: required field is not set",
        "unable to parse credentials",
    ),
    credential_hint=(
        "Run `gcloud auth application-default login` and `gcloud config set project ID` "
        "(or set GOOGLE_APPLICATION_CREDENTIALS and GOOGLE_CLOUD_PROJECT)."
    ),
    requirements=("pulumi>=3.181,<4", "pulumi-gcp>=10.0,<11"),
    export_credentials=(
        "Credentials: `gcloud auth application-default login` (or GOOGLE_APPLICATION_CREDENTIALS)."
    ),
    stoppable=True,
    storage_inputs=gcp_storage_inputs,
)
