"""plan → apply → logs → queue → exec → down on an ssh node pool of real sshd nodes."""

from __future__ import annotations

import hashlib
import json

import pytest
from e2ekit import task_file

pytestmark = pytest.mark.e2e

ENV_DUMP = """\
name: envcheck
num_nodes: {nodes}
resources:
  infra: ssh/lab
envs:
  QUOTED: "it's \\"quoted\\" $HOME `date` \\\\ end"
  MULTI: "line one\\nline two"
secrets:
  API_TOKEN: s3cr3t-value-xyz
run: |
  echo "rank=$SKYFORM_NODE_RANK sp_rank=$SKYPILOT_NODE_RANK num=$SKYFORM_NUM_NODES"
  echo "ips=$(echo "$SKYFORM_NODE_IPS" | wc -l) first=$(echo "$SKYFORM_NODE_IPS" | head -1)"
  echo "task=$SKYFORM_TASK_ID same=$([ "$SKYFORM_TASK_ID" = "$SKYPILOT_TASK_ID" ] && echo y)"
  printf 'quoted=%s|\\n' "$QUOTED"
  printf 'multi=%s|\\n' "$MULTI"
  [ "$(printf %s "$API_TOKEN" | sha256sum | cut -c1-16)" = {token_sha} ] && echo token-ok
  echo "$SKYFORM_CLUSTER_INFO" > ~/cluster_info.json
  pwd
"""


def _log_lines(output: str, rank: int) -> list[str]:
    prefix = f"node={rank}) "
    return [line.split(prefix, 1)[1] for line in output.splitlines() if prefix in line]


@pytest.mark.parametrize("nodes", [2, 4])
def test_multinode_job_sees_its_env_on_every_node(sky, pool, tmp_path, nodes):
    token_sha = hashlib.sha256(b"s3cr3t-value-xyz").hexdigest()[:16]
    text = ENV_DUMP.replace("{nodes}", str(nodes)).replace("{token_sha}", token_sha)
    task = task_file(tmp_path, "env.yaml", text)
    sky("plan", task, "-o", "plan.json", check=0)
    applied = sky("apply", "plan.json", check=0)
    assert "Apply complete! Clusters: 1 added" in applied.stdout
    homes = {  # no workdir: the job starts in the node user's home
        n["rank"]: str(next(s.home for s in pool.nodes if s.port == n["port"]))
        for n in json.loads(sky("status", "--json", check=0).stdout)[0]["nodes"]
    }
    for rank in range(nodes):
        lines = _log_lines(applied.stdout, rank)
        assert f"rank={rank} sp_rank={rank} num={nodes}" in lines
        assert f"ips={nodes} first={pool.handle(0).host}" in lines
        assert "task=skyform-envcheck-1 same=y" in lines
        assert 'quoted=it\'s "quoted" $HOME `date` \\ end|' in lines
        assert "multi=line one" in lines and "line two|" in lines
        assert "token-ok" in lines
        assert lines[-1] == homes[rank]
    # secrets never reach the plan, the logs, or --json output
    for text in (
        applied.output,
        (tmp_path / "plan.json").read_text(),
        sky("status", "--json", check=0).stdout,
        sky("queue", "envcheck", "--json", check=0).stdout,
    ):
        assert "s3cr3t-value-xyz" not in text
    info = pool.in_node(0, "cat", f"{pool.nodes[0].home}/cluster_info.json")
    assert json.loads(info.stdout)["num_nodes"] == nodes


def test_full_lifecycle_on_two_nodes(sky, pool, tmp_path):
    workdir = tmp_path / "proj"
    workdir.mkdir()
    (workdir / "data.txt").write_text("payload\n")
    (workdir / ".skyignore").write_text("secret.txt\n")
    (workdir / "secret.txt").write_text("do not ship\n")
    task = task_file(
        tmp_path,
        "job.yaml",
        """\
name: life
num_nodes: 2
workdir: proj
resources: {infra: ssh/lab}
setup: echo setting-up; touch ~/setup-marker
run: cat data.txt; ls secret.txt 2>/dev/null || echo ignored-ok
""",
    )
    sky("plan", task, "-o", "plan.json", check=0)
    applied = sky("apply", "plan.json", check=0)
    assert "payload" in applied.stdout and "ignored-ok" in applied.stdout

    status = json.loads(sky("status", "--json", check=0).stdout)
    assert [c["name"] for c in status] == ["life"] and status[0]["status"] == "UP"
    assert len(status[0]["nodes"]) == 2

    queue = sky("queue", "life", check=0)
    assert "SUCCEEDED" in queue.stdout

    logs = sky("logs", "life", "1", "--node", "1", check=0)
    assert "(life, node=1) payload" in logs.stdout and "node=0" not in logs.stdout

    ran = sky("exec", "life", "--num-nodes", "2", "echo again-$SKYFORM_NODE_RANK; exit 7")
    assert ran.exit_code == 7
    assert "again-0" in ran.stdout and "again-1" in ran.stdout
    assert "FAILED" in sky("queue", "life", check=0).stdout

    # re-planning the unchanged task is a no-op, and applying it does nothing
    replan = sky("plan", task, "-o", "plan2.json", "--detailed-exitcode")
    assert replan.exit_code == 0 and "No changes." in replan.stdout
    noop = sky("apply", "plan2.json", check=0)
    assert "setting-up" not in noop.stdout and "payload" not in noop.stdout

    down = sky("down", "-y", "life", check=0)
    assert "terminated" in down.stdout
    assert json.loads(sky("status", "--json", check=0).stdout) == []
    for i in range(2):  # the user's hosts are left clean
        listing = pool.in_node(i, "ls", "-A", str(pool.nodes[i].home)).stdout.split()
        assert ".skyform_node" not in listing and "skyform_workdir" not in listing


def test_failing_setup_and_failing_run_statuses(sky, pool, tmp_path):
    bad_setup = task_file(
        tmp_path,
        "s.yaml",
        """\
name: badsetup
resources: {infra: ssh/lab}
setup: echo broken >&2; exit 5
run: echo never
""",
    )
    sky("plan", bad_setup, "-o", "s.json", check=0)
    result = sky("apply", "s.json")
    assert result.exit_code == 1
    assert "FAILED_SETUP" in result.stdout and "never" not in result.stdout
    assert (
        json.loads(sky("queue", "badsetup", "--json", check=0).stdout)[0]["status"]
        == "FAILED_SETUP"
    )

    bad_run = task_file(
        tmp_path,
        "r.yaml",
        """\
name: badrun
num_nodes: 2
resources: {infra: ssh/lab}
run: '[ "$SKYFORM_NODE_RANK" = 1 ] && exit 4; sleep 30'
""",
    )
    sky("plan", bad_run, "-o", "r.json", check=0)
    result = sky("apply", "r.json", timeout=60)
    assert result.exit_code == 1
    job = json.loads(sky("queue", "badrun", "--json", check=0).stdout)[0]
    assert job["status"] == "FAILED" and job["exit_codes"]["1"] == 4
    sky("down", "-y", "badsetup", "badrun", check=0)


def test_stale_plan_and_detach(sky, pool, tmp_path):
    task = task_file(tmp_path, "t.yaml", "name: st\nresources: {infra: ssh/lab}\nrun: sleep 20\n")
    sky("plan", task, "-o", "a.json", check=0)
    sky("plan", task, "-o", "b.json", check=0)
    detached = sky("apply", "a.json", "--detach", check=0)
    assert "RUNNING" in detached.stdout and "skyform logs st 1 --follow" in detached.stdout
    stale = sky("apply", "b.json")
    assert stale.exit_code == 3
    assert "is stale" in stale.stderr and "st (up)" in stale.stderr
    task.write_text(task.read_text().replace("sleep 20", "sleep 1"))
    sky("plan", task, "-o", "c.json", check=0)
    task.write_text(task.read_text() + "# edited after planning\n")
    edited = sky("apply", "c.json")
    assert edited.exit_code == 3 and "task file" in edited.stderr and "changed" in edited.stderr
    cancelled = sky("cancel", "st", "--all", check=0)
    assert "CANCELLED" in cancelled.stdout
    sky("down", "-y", "st", check=0)


def test_pool_capacity_is_enforced_and_released(sky, pool, tmp_path):
    big = task_file(
        tmp_path,
        "big.yaml",
        "name: big\nnum_nodes: 3\nresources: {infra: ssh/lab}\nrun: echo big\n",
    )
    other = task_file(
        tmp_path,
        "other.yaml",
        "name: other\nnum_nodes: 2\nresources: {infra: ssh/lab}\nrun: echo other\n",
    )
    sky("plan", big, "-o", "big.json", check=0)
    sky("apply", "big.json", check=0)
    # the plan already counts the hosts `big` holds: refused when made, nothing to half-apply
    refused = sky("plan", other, "-o", "other.json")
    assert refused.exit_code == 4
    assert "ssh hosts held by other clusters (big) are not offered" in refused.stderr
    assert not (tmp_path / "other.json").exists()
    sky("down", "-y", "big", check=0)
    sky("plan", other, "-o", "other.json", check=0)
    sky("apply", "other.json", check=0)
    sky("down", "-y", "other", check=0)
