"""Failures of AWS and GCP stacks through the real Pulumi engine, as a user meets them: the
cloud refusing instances for lack of capacity (the real provider's text, as the engine prints
it, becomes skyform's capacity error, exit 4, and the next launch converges on what was
made), and a stack opened with another passphrase than the one that encrypts it."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.engine

NO_CAPACITY = {
    "aws": (
        "aws:ec2/instance:Instance",
        "{infra: aws/us-east-1, instance_type: m7a.large, use_spot: true}",
        "creating EC2 Instance: operation error EC2: RunInstances, https response error "
        "StatusCode: 500, RequestID: 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0, api error "
        "InsufficientInstanceCapacity: There is no Spot capacity available that matches your "
        "request.",
        ["firewall (aws:ec2/securityGroup:SecurityGroup)", "ssh-key (aws:ec2/keyPair:KeyPair)"],
    ),
    "gcp": (
        "gcp:compute/instance:Instance",
        "{infra: gcp/us-central1, instance_type: n2-standard-4, use_spot: true}",
        "Error waiting for instance to create: The zone "
        "'projects/skyform-test-project/zones/us-central1-a' does not have enough resources "
        "available to fulfill the request.  Try a different zone, or try again later.",
        ["internal (gcp:compute/firewall:Firewall)", "ssh (gcp:compute/firewall:Firewall)"],
    ),
}


@pytest.mark.parametrize("cloud_name", sorted(NO_CAPACITY))
def test_no_capacity_is_a_capacity_error_and_the_next_launch_converges(
    sky, test_cloud, tmp_path, cloud_name
):
    instance, resources, refusal, made_first = NO_CAPACITY[cloud_name]
    cloud = test_cloud.cloud
    name = f"full-{cloud_name}"
    (tmp_path / "task.yaml").write_text(
        f"name: {name}\nnum_nodes: 2\nresources: {resources}\nrun: echo ran on $(hostname)\n"
    )
    cloud.refuse(instance, refusal)
    refused = sky("launch", "task.yaml", "-y", check=4)
    error = refused.stderr[refused.stderr.index("Error: ") :]
    message, _, hint = error.partition("\nHint: ")
    assert message.startswith(f"Error: no capacity for cluster {name} (2x ")
    assert refusal in message  # the cloud's own words, once
    assert message.count(refusal) == 1
    assert "Resource monitor" not in message and "update failed" not in message
    existing = message.split("these resources exist now: ", 1)[1].strip()
    assert sorted(existing.split(", ")) == made_first
    assert "Plan again for another zone" in hint and f"skyform down {name}" in hint
    assert json.loads(sky("status", "--json").stdout)[0]["status"] == "INIT"

    cloud.refuse(instance, None)  # capacity is back
    again = sky("launch", "task.yaml", "-y")
    assert again.stdout.count("ran on ip-") == 2
    created = sorted(c["urn"].rsplit("::", 1)[-1] for c in cloud.calls("Create"))
    # what the failed launch made was kept, not made again; each node was tried twice
    assert created == sorted(
        [m.split(" ")[0] for m in made_first] + ["node-0", "node-0", "node-1", "node-1"]
    )
    sky("down", "-y", name)
    assert cloud.resources() == []


def test_a_stack_opened_with_another_passphrase_says_which_to_use(
    sky, test_cloud, tmp_path, monkeypatch
):
    """A GCP stack holds secrets (the SDK's secret outputs): nothing of it can be read or
    destroyed under another passphrase, and the user is told which one to use."""
    (tmp_path / "task.yaml").write_text(
        "name: keyed\nresources: {infra: gcp/us-central1, instance_type: n2-standard-4}\n"
        "run: echo up\n"
    )
    sky("launch", "task.yaml", "-y")
    monkeypatch.setenv("SKYFORM_PASSPHRASE", "not-the-one-it-was-made-with")
    for verb, args in (("refresh", ["status", "--refresh"]), ("destroy", ["down", "-y", "keyed"])):
        failed = sky(*args, check=1)
        assert (
            f"Error: cannot {verb} stack skyform/keyed: it is encrypted with another passphrase "
            "(getting stack configuration: get stack secrets manager: incorrect passphrase)"
        ) in failed.stderr
        assert "Hint: Use the passphrase the stack was made with: set SKYFORM_PASSPHRASE" in (
            failed.stderr
        )
    assert len(test_cloud.cloud.resources("gcp:compute/instance:Instance")) == 1  # untouched
    monkeypatch.delenv("SKYFORM_PASSPHRASE")
    sky("down", "-y", "keyed")
    assert test_cloud.cloud.resources() == []
