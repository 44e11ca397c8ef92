"""`skyform apply` of an AWS plan through the Pulumi engine, end to end, without a cloud.

The Pulumi CLI cannot be installed here, so the recording stand-in `pulumi` (the one the
adapter tests use) is first on PATH: the Automation API drives it exactly as it would drive
the real CLI, and its `up` answers with stack outputs that point at a real sshd node on
loopback. What follows is the real path — skyform's key, host-key recording, setup, a
detached job — and `down` destroys the stack (on a cloud that deletes the instance).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e


def _calls(root: Path) -> list[list[str]]:
    log = root / "standin-log.json"
    return [json.loads(line)["argv"] for line in log.read_text().splitlines()]


def test_apply_aws_plan_through_pulumi_then_down(
    sky, skyform_home, make_ssh_nodes, tmp_path, pulumi_standin
):
    nodes = make_ssh_nodes(1)
    node = nodes.handle(0)
    keys = skyform_home / "keys"  # skyform's own key pair is what cloud nodes trust
    keys.mkdir(mode=0o700)
    shutil.copy(nodes.key, keys / "skyform-key")
    shutil.copy(f"{nodes.key}.pub", keys / "skyform-key.pub")
    os.chmod(keys / "skyform-key", 0o600)
    (pulumi_standin / "standin-scenario.json").write_text(
        json.dumps(
            {
                "outputs": {
                    "ssh_user": node.user,
                    "nodes": [
                        {
                            "rank": 0,
                            "id": "i-0abc",
                            "public_ip": node.host,
                            "private_ip": node.host,
                            "port": node.port,
                        }
                    ],
                },
                "resources": [
                    {
                        "type": "aws:ec2/instance:Instance",
                        "name": "node-0",
                        "outputs": {"instanceState": "running"},
                    }
                ],
            }
        )
    )
    task = task_file(
        tmp_path,
        "aws.yaml",
        """\
name: on-aws
resources: {infra: aws/us-east-1, instance_type: m7a.large}
setup: echo set-up-once
run: echo "running on $SKYFORM_NUM_NODES node as $(whoami)"
""",
    )
    sky("plan", task, "-o", "plan.json", check=0)
    applied = sky("apply", "plan.json", timeout=180)
    assert applied.exit_code == 0, applied.output
    assert f"running on 1 node as {node.user}" in applied.stdout
    status = json.loads(sky("status", "--json", check=0).stdout)[0]
    assert status["engine"] == "pulumi" and status["stack"].endswith("on-aws")
    assert status["infra"].startswith("aws/us-east-1/")
    commands = [argv[0] for argv in _calls(pulumi_standin) if argv]
    assert "up" in commands and "destroy" not in commands

    down = sky("down", "-y", "on-aws", timeout=180)
    assert down.exit_code == 0, down.output
    assert "destroy" in [argv[0] for argv in _calls(pulumi_standin) if argv]
    assert json.loads(sky("status", "--json", check=0).stdout) == []
    stacks = json.loads((pulumi_standin / "standin-state.json").read_text())["stacks"]
    assert not any(s.get("resources") for s in stacks.values())  # the instance is gone
