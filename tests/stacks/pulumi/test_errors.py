"""The error adapter: what a user is told for each way Pulumi or a cloud can fail."""

from __future__ import annotations

import dataclasses
import shlex

import pytest
from pulumi.automation import errors as auto_errors
from pulumi.automation._cmd import CommandResult

from skyform.errors import CapacityError, InfraUnusable, LockedError, QuotaError, StackError
from skyform.stacks.pulumi.errors import Operation, error_lines, translate


def op(verb="up", cloud="aws") -> Operation:
    return Operation(
        verb=verb,
        cluster="train",
        stack="skyform/train",
        cloud=cloud,
        backend_url="file:///home/u/.skyform/pulumi",
        placement="2x g5.xlarge (spot) in aws/us-east-1/use1-az4",
        work_dir="/home/u/.skyform/pulumi-work/skyform/train",
    )


def cli_error(stdout="", stderr="", code=255):
    """The exception the SDK raises for this CLI output (its own classification)."""
    return auto_errors.create_command_error(CommandResult(stdout, stderr, code))


UP_OUTPUT = """Updating (train):
 +  pulumi:pulumi:Stack skyform-train creating
 +  aws:ec2:Instance node-0 creating (1s) error: {message}
Diagnostics:
  aws:ec2:Instance (node-0):
    error: {message}

  pulumi:pulumi:Stack (skyform-train):
    error: update failed
"""

# What the real CLI (v3.276) prints when a resource fails during an inline `up` (exit code 1,
# nothing on stderr): the resource's error, then the stack's own two lines. (A backslash at
# a line's end continues it.)
REAL_UP_FAILURE = """Updating (train):
 +  aws:ec2:Instance node-0 **creating failed** error: {message}
 +  pulumi:pulumi:Stack skyform-train creating (0s) error: update failed
 +  pulumi:pulumi:Stack skyform-train creating (0s) error: Resource monitor has terminated, \
shutting down
 +  pulumi:pulumi:Stack skyform-train **creating failed** 2 errors; 1 warning
Diagnostics:
  pulumi:pulumi:Stack (skyform-train):
    warning: using pulumi-resource-aws from $PATH at /opt/bin/pulumi-resource-aws
    error: update failed
    error: Resource monitor has terminated, shutting down

  aws:ec2:Instance (node-0):
    error: {message}

Resources:
    + 4 created
    1 errored
"""


# The real CLI's error (v3.276.0) when a self-managed backend's stack is locked.
LOCKED = """error: the stack is currently locked by 1 lock(s). Either wait for the other \
process(es) to end or delete the lock file with `pulumi cancel`.
  file:///home/u/.skyform/pulumi/.pulumi/locks/organization/skyform/train/0c9044b2.json: \
created by alice@laptop (pid 9211) at 2026-12-04T21:10:45Z
"""


def test_concurrent_update_is_a_lock_error_naming_the_holder_and_how_to_release_it():
    exc = cli_error(stderr=LOCKED)
    assert type(exc).__name__ == "ConcurrentUpdateError"
    err = translate(exc, op())
    assert type(err) is LockedError
    assert err.message == (
        "stack skyform/train (cluster train) is locked by another Pulumi update (the stack is "
        "currently locked by 1 lock(s): pulumi process 9211 of alice@laptop (since "
        "2026-12-04T21:10:45Z))"
    )
    assert "pulumi cancel --stack train --yes" in err.hint
    assert "cd /home/u/.skyform/pulumi-work/skyform/train" in err.hint
    assert "PULUMI_BACKEND_URL=file:///home/u/.skyform/pulumi" in err.hint


def test_the_command_that_releases_a_lock_runs_as_written_in_a_shell():
    """A team's backend URL has `?` and `&` (sslmode, connect_timeout), a home may have a
    space: the hint's command quotes them, so a shell neither globs nor backgrounds it."""
    team = dataclasses.replace(
        op(),
        backend_url="postgres://ci@db:5432/sky?connect_timeout=5&sslmode=prefer",
        work_dir="/home/u/my skyform/pulumi-work/skyform/train",
    )
    hint = translate(cli_error(stderr=LOCKED), team).hint
    command = hint.split("release the lock: ", 1)[1]
    assert shlex.split(command) == [
        "cd",
        "/home/u/my skyform/pulumi-work/skyform/train",
        "&&",
        "PULUMI_BACKEND_URL=postgres://ci@db:5432/sky?connect_timeout=5&sslmode=prefer",
        "pulumi",
        "cancel",
        "--stack",
        "train",
        "--yes",
    ]
    # the Pulumi Cloud's words for the same
    cloud = translate(
        cli_error(stderr="error: [409] Conflict: Another update is currently in progress.\n"), op()
    )
    assert cloud.message.endswith("(Another update is currently in progress)")


def test_missing_cli_gives_the_install_command():
    exc = FileNotFoundError(2, "No such file or directory", "pulumi")
    err = translate(exc, op("preview"))
    assert "the Pulumi CLI is not installed" in err.message
    assert "curl -fsSL https://get.pulumi.com | sh" in err.hint


def test_too_old_cli_gives_the_install_command():
    err = translate(auto_errors.InvalidVersionError("Minimum version ... 3.181.0"), op("refresh"))
    assert "too old" in err.message and "3.181.0+" in err.message
    assert "get.pulumi.com" in err.hint


@pytest.mark.parametrize(
    ("cloud", "message"),
    [
        ("aws", "creating EC2 Instance: InsufficientInstanceCapacity: We currently do not have "
                "sufficient g5.xlarge capacity in the Availability Zone you requested"),
        ("aws", "creating EC2 Instance: operation error EC2: RunInstances, api error "
                "InsufficientInstanceCapacity: There is no Spot capacity available"),
        ("gcp", "Error waiting for instance to create: The zone 'projects/p/zones/us-central1-a' "
                "does not have enough resources available to fulfill the request. "
                "ZONE_RESOURCE_POOL_EXHAUSTED"),
        ("kubernetes", "Pod default/train-0 is unschedulable: 0/3 nodes are available: "
                       "3 Insufficient nvidia.com/gpu"),
    ],
)  # fmt: skip
def test_capacity_errors_exit_4_so_recovery_replans(cloud, message):
    err = translate(cli_error(stdout=UP_OUTPUT.format(message=message)), op(cloud=cloud))
    assert isinstance(err, CapacityError) and err.exit_code == 4
    assert err.message.startswith(
        "no capacity for cluster train (2x g5.xlarge (spot) in aws/us-east-1/use1-az4): "
    )
    assert message[:40] in err.message
    assert "update failed" not in err.message
    assert "Plan again" in err.hint


@pytest.mark.parametrize(
    ("cloud", "message", "hint"),
    [
        ("aws", "configuring Terraform AWS Provider: no valid credential sources for Terraform "
                "AWS Provider found.", "aws configure"),
        ("aws", "InvalidClientTokenId: The security token included in the request is invalid",
         "aws configure"),
        ("gcp", "google: could not find default credentials.", "gcloud auth application-default"),
        ("kubernetes", "configured Kubernetes cluster is unreachable: unable to load kubeconfig",
         "kubectl --context"),
    ],
)  # fmt: skip
def test_credential_errors_carry_that_clouds_hint(cloud, message, hint):
    err = translate(cli_error(stdout=f"error: {message}\n"), op("preview", cloud=cloud))
    assert type(err) is InfraUnusable  # a managed job fails at once: waiting does not help
    assert err.message.startswith(f"{cloud} credentials are missing or not valid")
    assert hint in err.hint


@pytest.mark.parametrize(
    ("cloud", "message"),
    [
        ("aws", "creating EC2 Instance: VcpuLimitExceeded: You have requested more vCPU capacity"),
        ("gcp", "googleapi: Error 403: Quota 'NVIDIA_V100_GPUS' exceeded. Limit: 0.0"),
    ],
)
def test_quota_errors_say_quota_and_still_exit_4(cloud, message):
    err = translate(cli_error(stdout=UP_OUTPUT.format(message=message)), op(cloud=cloud))
    assert isinstance(err, QuotaError) and err.exit_code == 4
    assert err.message.startswith(f"the {cloud} account's quota refuses cluster train (")
    assert message[:40] in err.message
    assert "higher quota" in err.hint


def test_failure_mid_up_names_what_exists_and_how_to_converge():
    message = "creating EC2 Instance: InvalidAMIID.NotFound: The image id does not exist"
    existing = [
        "ssh-key (aws:ec2/keyPair:KeyPair)",
        "firewall (aws:ec2/securityGroup:SecurityGroup)",
    ]
    err = translate(cli_error(stdout=UP_OUTPUT.format(message=message)), op(), existing)
    assert type(err) is StackError
    assert err.message == (
        f"pulumi up of stack skyform/train failed: {message}; these resources exist now: "
        + ", ".join(existing)
    )
    assert "apply again" in err.hint and "skyform down train" in err.hint


def test_the_real_engines_own_lines_after_a_failure_are_not_the_cause():
    message = "creating EC2 Instance: api error InsufficientInstanceCapacity: no Spot capacity"
    err = translate(cli_error(stdout=REAL_UP_FAILURE.format(message=message), code=1), op())
    assert isinstance(err, CapacityError)
    assert err.message == (
        "no capacity for cluster train (2x g5.xlarge (spot) in aws/us-east-1/use1-az4): "
        f"{message}; nothing was created"
    )


@pytest.mark.parametrize("verb", ["up", "refresh", "destroy"])
def test_a_stack_under_another_passphrase_says_which_passphrase_to_use(verb):
    text = "error: getting stack configuration: get stack secrets manager: incorrect passphrase\n"
    err = translate(cli_error(stderr=text), op(verb), [])
    assert type(err) is StackError
    assert err.message == (
        f"cannot {verb} stack skyform/train: it is encrypted with another passphrase "
        "(getting stack configuration: get stack secrets manager: incorrect passphrase)"
    )
    assert "SKYFORM_PASSPHRASE" in err.hint and "secrets/pulumi-passphrase" in err.hint
    assert err.nothing_made  # the engine read nothing of the stack: a `down` keeps it UP
    # In the team's database only the team's passphrase opens a stack: no home's own.
    team = translate(cli_error(stderr=text), dataclasses.replace(op(verb), team=True), [])
    assert team.hint == (
        "Set SKYFORM_PASSPHRASE to the team's passphrase (the one the cluster's creator "
        "used), then run this again."
    )


def test_failure_before_anything_was_created_says_so():
    err = translate(cli_error(stdout="error: something broke\n"), op(), [])
    assert err.message.endswith("something broke; nothing was created")


def test_missing_default_subnet_explains_the_fix():
    err = translate(
        cli_error(stdout="error: reading EC2 Subnets: no matching EC2 Subnet found\n"), op()
    )
    assert "no default subnet in the planned zone" in err.message
    assert "aws ec2 create-default-subnet" in err.hint


def test_a_crash_in_the_program_is_called_a_program_failure():
    exc = cli_error(stdout="error: python inline source runtime error: KeyError: 'image'\n")
    assert type(exc).__name__ == "InlineSourceRuntimeError"
    err = translate(exc, op())
    assert err.message.startswith("skyform's Pulumi program for cluster train failed")


def test_errors_that_are_not_pulumis_are_left_alone():
    assert translate(KeyError("x"), op()) is None
    assert translate(RuntimeError("summary event never found"), op()) is None
    err = StackError("already ours")
    assert translate(err, op()) is err


def test_error_lines_prefer_the_clouds_message():
    text = UP_OUTPUT.format(message="boom") + "\nerror: boom\nerror: second\nerror: third\n"
    assert error_lines(text) == ["boom", "second", "third"]


# The real CLI's output (v3.276.0, pulumi-resource-kubernetes 4.25.0) for a refresh when the
# API server does not answer, or refuses the kubeconfig's token: the error line says only
# "unreachable"; the provider's warning before it says why.
K8S_REFRESH = """Refreshing (train):
 ~  kubernetes:core/v1:Pod node-0 refreshing (0s) warning: configured Kubernetes cluster is \
unreachable: unable to load schema information from the API server: {why}
 ~  kubernetes:core/v1:Pod node-0 refreshing (0s) error: failed to read resource state due to \
unreachable cluster. If the cluster was deleted, you can remove this resource from Pulumi state \
by rerunning the operation with the PULUMI_K8S_DELETE_UNREACHABLE environment variable set to \
"true"
 ~  kubernetes:core/v1:Pod node-0 **refreshing failed** error: failed to read resource state \
due to unreachable cluster.
    pulumi:pulumi:Stack skyform-train running error: update failed
"""
REFUSED = (
    'Get "https://127.0.0.1:9/openapi/v2?timeout=32s": dial tcp 127.0.0.1:9: connect: '
    "connection refused"
)
NO_TOKEN = "the server has asked for the client to provide credentials"


def test_an_unreachable_kubernetes_api_server_is_named_with_the_providers_reason():
    exc = cli_error(stdout=K8S_REFRESH.format(why=REFUSED), code=1)
    err = translate(exc, op("refresh", cloud="kubernetes"))
    assert type(err) is StackError
    assert err.message == (
        "cannot refresh cluster train: configured Kubernetes cluster is unreachable: unable to "
        f"load schema information from the API server: {REFUSED}"
    )
    assert "credentials" not in err.message and "PULUMI_K8S_DELETE_UNREACHABLE" not in err.message
    assert "did not answer" in err.hint and "skyform down --purge" in err.hint


def test_a_refused_kubernetes_token_is_a_credentials_error_with_the_reason():
    exc = cli_error(stdout=K8S_REFRESH.format(why=NO_TOKEN), code=1)
    err = translate(exc, op("destroy", cloud="kubernetes"))
    assert err.message == (
        "kubernetes credentials are missing or not valid: configured Kubernetes cluster is "
        f"unreachable: unable to load schema information from the API server: {NO_TOKEN}"
    )
    assert "kubectl --context CONTEXT get nodes" in err.hint


def test_a_missing_provider_plugin_says_how_to_install_it():
    line = (
        "no resource plugin 'pulumi-resource-kubernetes' found in the workspace at version "
        "v4.25.0 or on your $PATH"
    )
    exc = cli_error(stdout=f"Updating (train):\n    error: {line}\n", code=255)
    err = translate(exc, op("up", cloud="kubernetes"), [])
    assert err.message == (
        "cannot bring up cluster train: the Pulumi provider plugin for kubernetes is not "
        f"installed ({line})"
    )
    assert err.hint.startswith("Install it: pulumi plugin install resource kubernetes 4.25.0")
    assert err.nothing_made  # the stack holds nothing: no record is kept
