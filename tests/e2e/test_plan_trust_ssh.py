"""Issue 11 on a real ssh pool: an edited plan reaches no host, a reviewed one runs (CI's
`apply --expect-digest`), with the secret given only at apply."""

from __future__ import annotations

import json

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e

TASK = """\
name: reviewed
num_nodes: 2
resources: {infra: ssh/lab}
secrets: {API_TOKEN: null}
run: echo "ran on $SKYFORM_NODE_RANK token=${#API_TOKEN}"
"""


def test_an_edited_ssh_plan_touches_no_host_and_the_reviewed_one_runs(sky, pool, tmp_path):
    task = task_file(tmp_path, "t.yaml", TASK)
    sky("plan", task, "--secret", "API_TOKEN=abcdef", "-o", "plan.json", check=0)
    raw = json.loads((tmp_path / "plan.json").read_text())
    assert raw["tasks"][0]["job"]["secrets"] == ["API_TOKEN"] and "abcdef" not in json.dumps(raw)
    raw["tasks"][0]["job"]["run"] = "touch ~/pwned"
    (tmp_path / "edited.json").write_text(json.dumps(raw))
    refused = sky("apply", "edited.json", "--secret", "API_TOKEN=abcdef", check=1)
    assert "plan is corrupt or was edited: tasks.0.job.job_digest" in refused.stderr
    assert json.loads(sky("status", "--json", check=0).stdout) == []
    assert not any((node.home / "pwned").exists() for node in pool.nodes)

    digest = json.loads((tmp_path / "plan.json").read_text())["digest"]
    applied = sky(
        "apply", "plan.json", "--expect-digest", digest, "--secret", "API_TOKEN=rotated-value",
        check=0,
    )  # fmt: skip
    assert "ran on 0 token=13" in applied.stdout and "ran on 1 token=13" in applied.stdout
    sky("down", "-y", "reviewed", check=0)
