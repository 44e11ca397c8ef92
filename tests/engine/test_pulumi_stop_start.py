"""`skyform stop` and `start` of AWS and GCP clusters through the real Pulumi engine and the
test provider: a stopped instance's machine halts with its disk kept and its public address
released; started again, it has a new address (as EC2 and GCE give an instance without a
reserved address), which skyform must read to reach the node; and stopping changes nothing
but the power state (the resources keep the tags or labels they were made with)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.engine

CASES = {  # resources, and the inputs that carry the cloud's tags
    "aws": ("{infra: aws/us-east-1, instance_type: m7a.large}", "tags"),
    "gcp": ("{infra: gcp/us-central1, instance_type: n2-standard-4}", "labels"),
}


def _host(status: dict) -> str:
    (node,) = status["nodes"]
    return node["host"]


@pytest.mark.parametrize("cloud_name", sorted(CASES))
def test_stop_then_start_keeps_the_disk_and_reaches_the_new_address(
    sky, test_cloud, tmp_path, cloud_name
):
    resources, tag_key = CASES[cloud_name]
    cloud = test_cloud.cloud
    name = f"pw-{cloud_name}"
    (tmp_path / "task.yaml").write_text(
        f"name: {name}\nresources: {resources}\nrun: echo kept-on-disk > ~/kept.txt\n"
    )
    sky("launch", "task.yaml", "-y")
    first = _host(json.loads(sky("status", "--json").stdout)[0])
    launched = {c["urn"]: c["inputs"] for c in cloud.calls("Create") if not c["preview"]}

    before_stop = len(cloud.calls())
    sky("stop", "-y", name)
    stopping = cloud.calls()[before_stop:]
    assert test_cloud.host.machines == {}  # the machine halted; its disk is kept
    # Only the power state changed: no resource lost the tags or labels it was made with.
    for call in stopping:
        if call["method"] == "Update" and not call["preview"]:
            assert call["inputs"][tag_key] == launched[call["urn"]][tag_key], call["urn"]
    changed = sorted(
        (c["method"], c["type"].rsplit(":", 1)[-1])
        for c in stopping
        if c["method"] in ("Create", "Update", "Delete") and not c.get("preview")
    )
    assert changed == (
        [("Create", "InstanceState")] if cloud_name == "aws" else [("Update", "Instance")]
    )

    started = sky("start", "-y", name)
    assert "started" in started.stdout
    (machine,) = test_cloud.host.machines.values()
    assert machine.address != first  # a new address, as a restarted instance gets
    assert _host(json.loads(sky("status", "--json").stdout)[0]) == machine.address
    ran = sky("exec", name, "cat ~/kept.txt")
    assert "kept-on-disk" in ran.stdout  # the same disk, reached at its new address

    sky("down", "-y", name)
    assert cloud.resources() == []
    assert test_cloud.host.machines == {}
