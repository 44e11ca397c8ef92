"""AWS: EC2 instances in one zone, reached over SSH (program.py is the Pulumi program)."""

from __future__ import annotations

from skyform.stacks.pulumi.aws.credentials import check_aws
from skyform.stacks.pulumi.aws.inputs import aws_inputs, aws_storage_inputs
from skyform.stacks.pulumi.cloud import PulumiCloud


def _images(gpu: bool, arm: bool, accelerator: str | None) -> list[str]:
    if gpu:
        return ["custom-gpu-ubuntu-arm64" if arm else "custom-gpu-ubuntu"]
    return ["custom-cpu-ubuntu-arm64" if arm else "custom-cpu-ubuntu"]


CLOUD = PulumiCloud(
    name="aws",
    inputs=aws_inputs,
    node_type="aws:ec2/instance:Instance",
    alive=frozenset({"running", "pending"}),
    node_state=lambda outputs: str(outputs.get("instanceState") or ""),
    default_images=_images,
    check=check_aws,
    credential_patterns=(
        "no valid credential sources",
        "NoCredentialProviders",
        "failed to refresh cached credentials",
        "InvalidClientTokenId",
        "ExpiredToken",
        "UnrecognizedClientException",
        "AuthFailure",
        "SignatureDoesNotMatch",
        "security token included in the request is invalid",
        "failed to get shared config profile",
    ),
    credential_hint=(
        "Run `aws configure` (or `aws sso login`), or set AWS_PROFILE or "
        "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY; check with `aws sts get-caller-identity`."
    ),
    requirements=("pulumi>=3.181,<4", "pulumi-aws>=7.0,<8"),
    export_credentials=(
        "Credentials: the usual AWS ones (`aws configure`, AWS_PROFILE, or "
        "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)."
    ),
    regional_images=True,
    stoppable=True,
    storage_inputs=aws_storage_inputs,
)
